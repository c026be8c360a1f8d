/** What ZooKeeper's answers and non-answers mean to the locks: error codes, and the session's error. */
import * as zookeeper from 'node-zookeeper-client';
import { BackendUnreachableError } from '../backend/index.js';

/** Why holds were lost, or why the ZooKeeper side of a call failed: the `cause` the errors carry. */
export class ZooKeeperSessionError extends Error {
  override readonly name = 'ZooKeeperSessionError';
  constructor(
    readonly state: 'suspended' | 'expired' | 'closed',
    message: string,
  ) {
    super(message);
  }
}

/** No answer came (a lost connection, a timeout): the call may or may not have been applied. */
export function unanswered(error: unknown): boolean {
  return (
    error instanceof ZooKeeperSessionError ||
    error instanceof BackendUnreachableError ||
    UNANSWERED.has(codeOf(error) ?? -1)
  );
}

/** The ZooKeeper error code of a driver error (NO_NODE, NODE_EXISTS...), if it is one. */
export function codeOf(error: unknown): number | undefined {
  return error instanceof zookeeper.Exception ? error.getCode() : undefined;
}

export const { NO_NODE, NODE_EXISTS, NOT_EMPTY, BAD_VERSION } = zookeeper.Exception;
/** The driver's codes for a call whose answer never came (it may or may not have been applied). */
export const UNANSWERED = new Set([
  zookeeper.Exception.CONNECTION_LOSS,
  zookeeper.Exception.OPERATION_TIMEOUT,
  zookeeper.Exception.SESSION_EXPIRED,
]);

/** A driver callback's error, and the callback of one call. */
export type DriverError = Error | zookeeper.Exception | null;
export type Done<T> = (error: DriverError, value?: T) => void;
