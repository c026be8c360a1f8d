/**
 * Holder metadata: who took a hold (host, pid, the caller's label, the acquiring span's trace id, when),
 * as the core hands it to a backend with each attempt (AttemptRequest.holder) and as `inspect()`
 * reports it back (LockInfo.heldBy). One JSON encoding, so every backend that stores it as text
 * (a Redis key, a znode's data, an etcd value, a row) reads what any other client of it wrote.
 */
import { hostname } from 'node:os';

/** Who takes a hold, as the acquiring client tells its backend; a backend MAY store it with the hold. */
export interface HolderMetadata {
  /** The acquiring process's host name (`os.hostname()`). */
  readonly host: string;
  /** The acquiring process's id. */
  readonly pid: number;
  /** The caller's `label` acquire option, if it gave one. */
  readonly label?: string;
  /** The trace id of the span the acquire ran under, when tracing is on (see docs/instrumentation.md). */
  readonly traceId?: string;
  /** When the attempt that took the hold was made: ms since the epoch, by the holder's clock. */
  readonly acquiredAt: number;
}

/**
 * One holder of a lock, as `inspect()` reports it: its owner id and, where its backend stored them,
 * the holder's metadata (a hold handed over by a backend without metadata, or adopted, has the owner
 * only).
 */
export interface LockHolderInfo extends Partial<HolderMetadata> {
  /** The holder's owner id. */
  readonly owner: string;
}

const HOST = hostname();

/** The metadata of an attempt made now by this process. */
export function holderNow(label: string | undefined, traceId: string | undefined): HolderMetadata {
  return { host: HOST, pid: process.pid, label, traceId, acquiredAt: Date.now() };
}

/** Longest encoded record `decodeHolder` accepts (a label is at most 64 characters, an owner 256). */
const MAX_RECORD = 1024;

/** The text a backend stores for `owner`'s hold: JSON `{owner, host, pid, label?, traceId?, acquiredAt}`. */
export function encodeHolder(owner: string, holder: HolderMetadata): string {
  return JSON.stringify({ owner, ...holder });
}

/**
 * Reads a record `encodeHolder` wrote; undefined when it is not one (another program's bytes in the
 * store, a record cut short): a monitoring read never throws over a stranger's data.
 */
export function decodeHolder(text: string | Buffer | null | undefined): LockHolderInfo | undefined {
  if (text === null || text === undefined || text.length === 0 || text.length > MAX_RECORD) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(typeof text === 'string' ? text : text.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { owner, host, pid, label, traceId, acquiredAt } = value as Record<string, unknown>;
  if (typeof owner !== 'string') return undefined;
  const info: { -readonly [K in keyof LockHolderInfo]: LockHolderInfo[K] } = { owner };
  if (typeof host === 'string') info.host = host;
  if (typeof pid === 'number') info.pid = pid;
  if (typeof label === 'string') info.label = label;
  if (typeof traceId === 'string') info.traceId = traceId;
  if (typeof acquiredAt === 'number') info.acquiredAt = acquiredAt;
  return info;
}
