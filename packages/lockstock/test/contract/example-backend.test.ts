import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// examples/socket-backend: a backend written against lockstock's published exports only (lockstock,
// lockstock/backend, lockstock/testing, resolved by package name to the build) passes the shipped
// contract suite under node:test — the second runner. (npm run typecheck checks its JavaScript
// against the published declarations.)
const example = fileURLToPath(new URL('../../../../examples/socket-backend/', import.meta.url));
const run = promisify(execFile);

describe('the example backend (examples/socket-backend)', () => {
  it('passes lockstock/testing under node:test', { timeout: 180_000 }, async () => {
    // Its four test files side by side, each with its own lock server (the only server it needs).
    const { stdout } = await run(
      process.execPath,
      ['--test', '--test-concurrency=4', '--test-reporter=tap', `${example}test/`],
      { cwd: example, timeout: 170_000, maxBuffer: 16 << 20 },
    ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`node --test failed: ${error.message}\n${error.stdout ?? ''}`);
    });
    const count = (name: string) => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(stdout)?.[1]);
    expect(count('fail')).toBe(0);
    expect(count('cancelled')).toBe(0);
    // Every kind it offers ran (a suite that skipped everything would pass too).
    expect(count('pass')).toBeGreaterThanOrEqual(82);
  });
});
