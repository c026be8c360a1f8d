/**
 * Polls `check` until it holds: for observing state that settles asynchronously (a pipeline writing,
 * a message arriving) — never to wait for time itself. Fails after `limitMs`.
 */
export async function until(what: string, check: () => Promise<boolean>, limitMs = 10_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
