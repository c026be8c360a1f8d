/**
 * The long tier: rows too slow for every CI run, run by `npm run test:long` (LOCKSTOCK_LONG=1).
 * Every file that has such rows keeps a quick row in `npm test` and is listed in the root
 * package.json's test:long script (packages/service/test/long-tier.test.ts checks the list).
 */
export const longTier = process.env.LOCKSTOCK_LONG === '1';
