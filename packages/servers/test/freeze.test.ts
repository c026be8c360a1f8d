import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { freezeProcess } from '../src/index.js';

const states = (pid: number) =>
  readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2];
  });

describe('freezeProcess', () => {
  it('returns only once every thread of a busy multi-threaded process is stopped', async () => {
    // A Node child spinning on its main thread, with its worker threads alongside.
    const child = spawn(process.execPath, ['-e', 'process.stdout.write("up\\n", () => { for (;;) {} })'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const exited = once(child, 'exit');
    try {
      await once(child.stdout, 'data');
      const pid = child.pid!;
      for (let round = 0; round < 20; round++) {
        freezeProcess(pid);
        const seen = states(pid);
        expect(seen.length).toBeGreaterThan(1);
        expect(seen.every((state) => state === 'T')).toBe(true);
        process.kill(pid, 'SIGCONT');
      }
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });
});
