import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/** The next IPC message of `type` from a benchmark child; rejects if the child ends first. */
export function nextMessage<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: { type?: string }) => {
      if (message?.type !== type) return;
      child.off('message', onMessage);
      resolve(message as T);
    };
    child.on('message', onMessage);
    // 'close', not 'exit': a worker exits right after sending its report, and 'exit' can come before
    // a large report has been read off the IPC channel ('close' waits for the channel to end).
    child.once('close', (code) => reject(new Error(`benchmark worker exited with code ${code}`)));
  });
}

/** Kills the children still running and waits until every one has exited. */
export async function endChildren(children: readonly ChildProcess[]): Promise<void> {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await Promise.all(children.map((child) => (child.exitCode === null ? once(child, 'exit') : undefined)));
}
