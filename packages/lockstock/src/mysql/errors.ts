/**
 * The connection a hold was pinned to ended (killed, dropped, closed, or it stopped answering): the
 * `cause` of its loss. GET_LOCK's locks belong to the server session, which ended with it.
 */
export class MySqlSessionError extends Error {
  override readonly name = 'MySqlSessionError';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** mysql2 marks errors after which the connection is unusable (lost, killed, protocol) as fatal. */
export function endsSession(error: unknown): boolean {
  const e = error as { fatal?: unknown; code?: unknown } | null;
  return (
    e?.fatal === true ||
    e?.code === 'PROTOCOL_CONNECTION_LOST' ||
    e?.code === 'ER_CONNECTION_KILLED' ||
    (error instanceof Error && /closed state|Connection lost/i.test(error.message))
  );
}

/** ER_QUERY_INTERRUPTED: a statement a KILL QUERY ended (on MySQL, one that raced a cancelled wait). */
export const interrupted = (error: unknown): boolean => (error as { errno?: unknown } | null)?.errno === 1317;
