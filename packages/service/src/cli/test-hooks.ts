import type { Logger } from 'pino';

/**
 * The environment variables by which tests make a process behave differently — some deliberately
 * wrong (a sold-out answer without proof, a crash mid-transfer) — each with what it does. Every one
 * read anywhere in src/ is listed here (test/cli/test-hooks.test.ts checks), so that a process
 * started with one says so loudly at start (warnTestHooks) instead of misbehaving silently.
 */
export const TEST_HOOKS: Readonly<Record<string, string>> = {
  LOCKSTOCK_FAULT:
    'fault injection: a crash test stops or kills the process at a named point, or serve answers wrongly on purpose (false-sold-out)',
  LOCKSTOCK_RECORD_VERDICTS: 'every proven sold-out verdict of a split sale is printed on stdout',
  LOCKSTOCK_TEST_CLAIM_PAUSE_MS: 'a pause between judging a data-directory claim stale and taking it over',
  LOCKSTOCK_TEST_REDLOCK_NODE_TIMEOUT_MS: "the lock benchmark's Redlock votes get a longer timeout",
};

/** The test hooks set (non-empty) in `env`, with their values. */
export function activeTestHooks(
  env: NodeJS.ProcessEnv = process.env,
): Array<{ hook: string; value: string }> {
  return Object.keys(TEST_HOOKS).flatMap((hook) => {
    const value = env[hook];
    return value === undefined || value === '' ? [] : [{ hook, value }];
  });
}

/** One warning per active test hook, naming it: the words a log line or stderr carries. */
export function testHookWarnings(env: NodeJS.ProcessEnv = process.env): string[] {
  return activeTestHooks(env).map(
    ({ hook, value }) =>
      `test hook ${hook}=${value} is active (${TEST_HOOKS[hook]}): never set it outside tests`,
  );
}

/** Logs a warning per active test hook (at start: before anything it changes can happen). */
export function warnTestHooks(logger: Logger, env: NodeJS.ProcessEnv = process.env): void {
  const warnings = testHookWarnings(env);
  activeTestHooks(env).forEach(({ hook, value }, index) => logger.warn({ hook, value }, warnings[index]));
}
