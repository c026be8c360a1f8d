import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';

/** The nice value of a thread, from /proc (field 19 of stat). */
const niceOf = (statPath: string) => Number(readFileSync(statPath, 'utf8').split(') ')[1]?.split(' ')[16]);

describe.runIf(process.platform === 'linux')('lowerThisThreadPriority', () => {
  it('lowers the calling thread only, not the process', async () => {
    const moduleUrl = new URL('../../dist/cli/thread-priority.js', import.meta.url).href;
    const worker = new Worker(
      `import('${moduleUrl}').then(({ lowerThisThreadPriority }) => {
         const lowered = lowerThisThreadPriority();
         const stat = require('node:fs').readFileSync('/proc/thread-self/stat', 'utf8');
         require('node:worker_threads').parentPort.postMessage({ lowered, stat });
       });`,
      { eval: true },
    );
    const { lowered, stat } = await new Promise<{ lowered: boolean; stat: string }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    expect(lowered).toBe(true);
    expect(Number(stat.split(') ')[1]?.split(' ')[16])).toBe(19);
    expect(niceOf('/proc/thread-self/stat')).toBe(niceOf(`/proc/${process.pid}/stat`));
    expect(niceOf(`/proc/${process.pid}/stat`)).not.toBe(19);
  });
});
