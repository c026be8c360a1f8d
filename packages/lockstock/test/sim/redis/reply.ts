/** A RESP2 reply: a string (bulk), a number (integer), null (nil), an array, `{ ok }` (status). */
export type Reply = string | number | null | Reply[] | { readonly ok: string };

/** An error reply ("ERR ...", "WRONGTYPE ..."), as a client sees it. */
export class RedisError extends Error {
  override readonly name = 'ReplyError';
}
