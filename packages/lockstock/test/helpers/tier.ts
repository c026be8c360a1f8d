/**
 * The long tier: rows too slow for every CI run, run by `npm run test:long` (LOCKSTOCK_LONG=1).
 * Every file that has such rows keeps a quick row in `npm test` and is listed in the root
 * package.json's test:long script (packages/service/test/long-tier.test.ts checks the list).
 */
export const longTier = process.env.LOCKSTOCK_LONG === '1';

/**
 * The contract's quick row on the backends other than Redis on one server: the kinds whose store
 * logic differs most (a plain hold, a store-kept queue, permits). Every kind in the long tier.
 */
export const QUICK_CONTRACT_KINDS: readonly string[] = ['mutex', 'fair', 'semaphore'];
