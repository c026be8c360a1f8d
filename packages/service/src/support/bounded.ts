/**
 * `work`, or a rejection once `timeoutMs` have passed without an answer: a probe or a reading for
 * /healthz or /metrics never hangs on a dependency that stopped answering. The work itself is not
 * cancelled; a failure it reports after the timeout is dropped, since nobody waits for it any more.
 */
export function bounded<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  work.catch(() => undefined); // a late failure after the timeout has nobody to tell
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
