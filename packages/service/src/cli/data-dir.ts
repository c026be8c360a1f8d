import { createHash, randomUUID } from 'node:crypto';
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * One process owns a data directory: the embedded redis-server's append-only file and PGlite's
 * pgdata must never be opened by two processes (two Redis processes writing one AOF corrupt it; a
 * repair would fix a copy, not the live Redis). The owner writes `owner.json` (pid, command, and once
 * known the URLs it serves) with O_EXCL — the same idea as PostgreSQL's postmaster.pid — and removes
 * it when it stops. A file whose process is gone (a crash, SIGKILL) is stale and taken over, by one
 * of the processes that race for it (see removeStaleClaim).
 */
export interface DataDirOwner {
  readonly pid: number;
  /** The command that owns it: 'serve', 'reconcile'. */
  readonly command: string;
  readonly startedAt: string;
  /** The Redis the owner runs on (its private redis-server in embedded mode). */
  readonly redisUrl?: string;
  /** Where the owner answers HTTP (serve). */
  readonly httpUrl?: string;
  /** Random, one per claim: a claim's content never recurs (its takeover relies on that). */
  readonly nonce?: string;
}

export const OWNER_FILE = 'owner.json';

/** Another process owns the directory: say which, and where it serves. */
export class DataDirBusyError extends Error {
  constructor(
    readonly dir: string,
    readonly owner: DataDirOwner,
  ) {
    super(
      `${dir} is in use by lockstock ${owner.command} (pid ${owner.pid}` +
        `${owner.httpUrl ? `, serving on ${owner.httpUrl}` : ''}${owner.redisUrl ? `, Redis ${owner.redisUrl}` : ''}): ` +
        'stop it first, or give this one another --data-dir',
    );
  }
}

/** The data directory holds no lockstock store (a typo, or `serve` never ran there). */
export class NoStoreError extends Error {
  constructor(readonly dir: string) {
    super(
      `${dir} holds no lockstock store (no redis/ or pgdata/ in it): pass the --data-dir of a lockstock serve, ` +
        'or --redis and --database for your own servers',
    );
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // alive, someone else's
  }
}

function parseOwner(text: string): DataDirOwner | undefined {
  try {
    const owner = JSON.parse(text) as DataDirOwner;
    return Number.isSafeInteger(owner.pid) && owner.pid > 0 ? owner : undefined;
  } catch {
    return undefined; // not a claim this code wrote (one half-written by an older lockstock, say)
  }
}

function readOwner(file: string): DataDirOwner | undefined {
  try {
    return parseOwner(readFileSync(file, 'utf8'));
  } catch {
    return undefined; // gone meanwhile
  }
}

/** The file's content, or undefined if there is no such file. */
function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Links `from` to `to`: false if `to` exists (link(2) never replaces a file: O_EXCL for a name). */
function tryLink(from: string, to: string): boolean {
  try {
    linkSync(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/**
 * Test hook: LOCKSTOCK_TEST_CLAIM_PAUSE_MS pauses between judging a claim stale and taking it over,
 * so that a test's racing processes have all judged it before any acts (test/cli/data-dir-claim.test.ts).
 */
function pauseForTest(): void {
  const ms = Number(process.env.LOCKSTOCK_TEST_CLAIM_PAUSE_MS);
  if (ms > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

const TAKEOVER_PREFIX = `${OWNER_FILE}.takeover.`;
/** More dead takers of one stale claim than this is not a race: something else is wrong. */
const MAX_TAKEOVER_LEVELS = 64;

/**
 * The marker whose creation (with O_EXCL) takes over the stale claim `staleClaim` (the claim file's
 * whole content) at `level` (see removeStaleClaim). Exported for the tests.
 */
export function takeoverFile(dir: string, staleClaim: string, level: number): string {
  const id = createHash('sha256').update(staleClaim).digest('hex').slice(0, 32);
  return join(resolve(dir), `${TAKEOVER_PREFIX}${id}.${level}`);
}

/**
 * Removes the stale claim `stale` (the claim file's whole content, whose process is gone) from
 * `file`, or throws DataDirBusyError naming a live process that is taking it over already. Returns
 * without removing anything if the claim is not `stale` any more (someone else took it over).
 *
 * Deleting "the file I judged stale" cannot be done atomically by itself: unlink and rename act on
 * whatever is at the path by then, which may be a fresh claim another racer made after taking the
 * stale one over (so may renaming it aside: while a fresh claim is aside, a third process links its
 * own into the empty place, and both believe they own the directory). So the racers first decide who
 * may delete it, by a file created with O_EXCL (a link, which fails if the name exists) whose name
 * derives from the stale claim's content: `owner.json.takeover.<hash>.<level>`. Why only one process
 * ever deletes, and deletes only the stale claim:
 *
 * - A stale claim, once it has left the path, never comes back: its process is dead (so never writes
 *   it again), and no other claim has the same content (each holds a random nonce, besides its pid
 *   and start time).
 * - Markers of a claim are deleted only once that claim has left the path for good (by its taker
 *   after deleting it or seeing it gone; by a new owner, whose claim is at the path). Until then no
 *   marker name of it is created twice, and whoever creates one after that finds the claim gone.
 * - The taker is the creator of level 0, or of level n+1 once the creator of level n is seen dead
 *   (died midway: a dead process does nothing more). A live creator of a lower level makes the others
 *   stand back. So at most one live process at a time holds the takeover of one stale claim.
 * - The taker reads the claim file again after winning and deletes it only if it still holds the
 *   stale content. Between that read and the delete nothing else can change the file: a claim is
 *   linked only where there is none; the stale claim's owner is dead (so neither updates nor
 *   releases it); and no other process holds its takeover.
 *
 * Then the new claim is linked into the empty place, which again only one racer can do.
 */
function removeStaleClaim(root: string, file: string, stale: string, draft: string): void {
  const markers: string[] = [];
  for (let level = 0; ; level++) {
    if (level === MAX_TAKEOVER_LEVELS) {
      throw new Error(`could not claim ${root}: ${MAX_TAKEOVER_LEVELS} takeovers of its stale claim died`);
    }
    const marker = takeoverFile(root, stale, level);
    markers.push(marker);
    if (tryLink(draft, marker)) break; // the takeover is ours (the draft says who we are)
    const text = readText(marker);
    if (text === undefined) return; // markers are removed once the stale claim is gone: look again
    const taker = parseOwner(text);
    if (taker && taker.pid !== process.pid && alive(taker.pid)) throw new DataDirBusyError(root, taker);
    // Its taker died midway (a marker naming this process is one of a dead process whose pid was
    // reused: a claim() runs to its end before another starts, and removes its markers): the next
    // level decides.
  }
  if (readText(file) === stale) rmSync(file);
  // The stale claim is gone for good (removed now, or by another before): its markers are garbage.
  for (const marker of markers) rmSync(marker, { force: true });
}

/**
 * Removes the markers of takeovers that died midway. Called by a new owner: every marker is then of
 * a claim gone for good (this owner's claim is in the place), so removing it is safe.
 */
function removeTakeoverMarkers(root: string): void {
  for (const name of readdirSync(root)) {
    if (name.startsWith(TAKEOVER_PREFIX)) rmSync(join(root, name), { force: true });
  }
}

/** The live process that owns `dir`, if any. */
export function runningOwner(dir: string): DataDirOwner | undefined {
  const owner = readOwner(join(resolve(dir), OWNER_FILE));
  return owner && owner.pid !== process.pid && alive(owner.pid) ? owner : undefined;
}

/** Throws NoStoreError unless `dir` holds an embedded store (what `serve` creates). */
export function assertStore(dir: string): void {
  const root = resolve(dir);
  const isDir = (path: string) => existsSync(path) && statSync(path).isDirectory();
  if (!isDir(join(root, 'redis')) && !isDir(join(root, 'pgdata'))) throw new NoStoreError(root);
}

/** This process's ownership of a data directory. */
export class DataDirClaim {
  private constructor(
    readonly dir: string,
    private owner: DataDirOwner,
  ) {}

  /**
   * Claims `dir` for `command` (creating it), or throws DataDirBusyError naming the live owner (or a
   * live process that is taking over its stale claim right now). A stale claim (its process is gone)
   * is taken over, by one process only however many race for it (removeStaleClaim).
   */
  static claim(dir: string, command: string): DataDirClaim {
    const root = resolve(dir);
    mkdirSync(root, { recursive: true });
    const file = join(root, OWNER_FILE);
    const owner: DataDirOwner = {
      pid: process.pid,
      command,
      startedAt: new Date().toISOString(),
      nonce: randomUUID(),
    };
    // Written whole beside it, then linked into place: the link fails if a claim exists, and a claim
    // is never seen half-written (a reader would take an unreadable claim for a stale one).
    const draft = join(root, `${OWNER_FILE}.${process.pid}`);
    writeFileSync(draft, `${JSON.stringify(owner)}\n`, { mode: 0o600 });
    try {
      // Each round that does not return or throw follows another process's progress (a claim
      // released, a stale claim removed, a new claim linked first): a few suffice.
      for (let attempt = 0; attempt < 10; attempt++) {
        if (tryLink(draft, file)) {
          removeTakeoverMarkers(root);
          return new DataDirClaim(root, owner);
        }
        const stale = readText(file);
        if (stale === undefined) continue; // released meanwhile
        const current = parseOwner(stale);
        if (current && alive(current.pid)) throw new DataDirBusyError(root, current);
        pauseForTest();
        removeStaleClaim(root, file, stale, draft);
      }
    } finally {
      rmSync(draft, { force: true });
    }
    throw new Error(`could not claim ${root}: ${file} keeps coming back`);
  }

  /**
   * Records where the owner serves, for the commands that come after it. Written beside and renamed
   * over the claim: a reader never sees half a file (which it would take for a stale claim).
   */
  update(fields: Pick<DataDirOwner, 'redisUrl' | 'httpUrl'>): void {
    this.owner = { ...this.owner, ...fields };
    const next = join(this.dir, `${OWNER_FILE}.${process.pid}`);
    writeFileSync(next, `${JSON.stringify(this.owner)}\n`, { mode: 0o600 });
    renameSync(next, join(this.dir, OWNER_FILE));
  }

  release(): void {
    if (readOwner(join(this.dir, OWNER_FILE))?.pid === process.pid) {
      rmSync(join(this.dir, OWNER_FILE), { force: true });
    }
  }
}
