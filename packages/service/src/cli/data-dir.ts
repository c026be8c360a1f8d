import {
  existsSync,
  linkSync,
  mkdirSync,
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
 * it when it stops. A file whose process is gone (a crash, SIGKILL) is stale and taken over.
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

function readOwner(file: string): DataDirOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(file, 'utf8')) as DataDirOwner;
    return Number.isSafeInteger(owner.pid) && owner.pid > 0 ? owner : undefined;
  } catch {
    return undefined; // gone meanwhile, or half-written by a process that died writing it
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
   * Claims `dir` for `command` (creating it), or throws DataDirBusyError naming the live owner. A
   * stale claim (its process is gone) is taken over.
   */
  static claim(dir: string, command: string): DataDirClaim {
    const root = resolve(dir);
    mkdirSync(root, { recursive: true });
    const file = join(root, OWNER_FILE);
    const owner: DataDirOwner = { pid: process.pid, command, startedAt: new Date().toISOString() };
    // Written whole beside it, then linked into place: the link fails if a claim exists, and a claim
    // is never seen half-written (a reader would take an unreadable claim for a stale one).
    const draft = join(root, `${OWNER_FILE}.${process.pid}`);
    writeFileSync(draft, `${JSON.stringify(owner)}\n`, { mode: 0o600 });
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          linkSync(draft, file);
          return new DataDirClaim(root, owner);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        const current = readOwner(file);
        if (current && alive(current.pid)) throw new DataDirBusyError(root, current);
        rmSync(file, { force: true }); // stale: its process is gone
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
