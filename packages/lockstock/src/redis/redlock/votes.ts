import { LockError } from '../../locks/errors.js';

/** What one master answered to one Redlock request. */
export type Vote =
  | { readonly node: string; readonly vote: 'yes' }
  /** `remainingMs`: the holder's lease left on that master; undefined when its key has no expiry. */
  | { readonly node: string; readonly vote: 'held'; readonly remainingMs: number | undefined }
  | { readonly node: string; readonly vote: 'gone' }
  | { readonly node: string; readonly vote: 'error'; readonly error: Error };

export const countVotes = (votes: readonly Vote[], kind: Vote['vote']): number =>
  votes.filter((v) => v.vote === kind).length;

/**
 * Too many masters failed to answer for a majority to be possible, whatever the others said: the
 * lock is not known to be held by anyone, the masters are down (node-redlock's users could not tell
 * the two apart). `votes` says what each master answered.
 */
export class QuorumUnavailableError extends LockError {
  override readonly name = 'QuorumUnavailableError';
  readonly code = 'ERR_QUORUM_UNAVAILABLE';
  constructor(
    lockName: string,
    readonly quorum: number,
    readonly votes: readonly Vote[],
  ) {
    super(
      lockName,
      `Redlock "${lockName}": only ${votes.length - countVotes(votes, 'error')} of ${votes.length} masters answered, ` +
        `${quorum} are needed (${votes
          .filter((v) => v.vote === 'error')
          .map((v) => `${v.node}: ${v.vote === 'error' ? v.error.message : ''}`)
          .join('; ')})`,
    );
  }
}
