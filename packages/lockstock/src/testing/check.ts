/** Small assertions of the suite beyond node:assert (it runs under any test runner). */
import assert from 'node:assert/strict';

/** Asserts that every field of `expected` equals `actual`'s (a partial match). */
export function assertFields(actual: unknown, expected: Record<string, unknown>, label = ''): void {
  const fields = actual as Record<string, unknown>;
  for (const [key, value] of Object.entries(expected)) {
    assert.equal(fields[key], value, `${label}${key}: ${String(fields[key])}, expected ${String(value)}`);
  }
}

/** Asserts `value` is an instance of `type`, naming what it was otherwise. */
export function assertInstance(
  value: unknown,
  type: abstract new (...args: never[]) => unknown,
  label = '',
): void {
  const name = (value as Error | undefined)?.name ?? typeof value;
  assert.ok(value instanceof type, `${label}expected a ${type.name}, got ${name}: ${String(value)}`);
}

/** Asks `read` until it returns `expected`, for at most `timeoutMs` (a bound, not a synchronisation). */
export async function poll<T>(read: () => Promise<T>, expected: T, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value === expected) return;
    if (performance.now() > deadline)
      assert.equal(value, expected, `still ${String(value)} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** How `promise` settled, or 'pending' if it had not within `ms` (a bound, not a synchronisation). */
export function settlement(promise: Promise<unknown>, ms: number): Promise<unknown> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('pending'), ms);
    promise.then(
      (value) => (clearTimeout(timer), resolve(value)),
      (error: unknown) => (clearTimeout(timer), resolve(error)),
    );
  });
}
