/** A server binary is missing and could not be installed; `message` says exactly what to run. */
export class MissingBinaryError extends Error {
  override readonly name = 'MissingBinaryError';
  readonly code = 'ERR_MISSING_BINARY';
  constructor(
    readonly binary: string,
    readonly installCommand: string,
    detail?: string,
  ) {
    super(
      `${binary} was not found${detail ? ` (${detail})` : ''}. Install it with:\n  ${installCommand}\n` +
        `then run the command again.`,
    );
  }
}

/** A server process did not come up; `logTail` holds the last lines it printed. */
export class ServerStartError extends Error {
  override readonly name = 'ServerStartError';
  readonly code = 'ERR_SERVER_START';
  constructor(
    readonly server: string,
    reason: string,
    readonly logTail: string,
  ) {
    super(`${server} did not start: ${reason}${logTail ? `\n--- last output ---\n${logTail}` : ''}`);
  }
}
