import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { lockSourcesDigest } from '../helpers/lock-sources.js';

/**
 * docs/faults.json (the README's and docs/what-holds.md's "what holds under which fault" tables)
 * must describe the lock library as it is: its lock rows record the digest of the sources they were
 * measured on (test/faults-report-setup.ts), compared here with today's. It once lagged them by
 * eight commits unnoticed.
 */
const report = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../../../docs/faults.json', import.meta.url)), 'utf8'),
) as { locks?: { ranAt?: string; sources?: { sha256: string; files: number } } };

const REGENERATE =
  'the lock sources changed since docs/faults.json was made: run `npm run test:faults -w lockstock` ' +
  '(9 to 12 minutes on 2 cores; it rewrites the lock rows of docs/faults.json), then `npm run faults:table`, and ' +
  'commit the report and the tables';

describe('docs/faults.json', () => {
  it('was made from the lock sources of today', () => {
    expect(report.locks?.sources, REGENERATE).toEqual(lockSourcesDigest());
  });
});
