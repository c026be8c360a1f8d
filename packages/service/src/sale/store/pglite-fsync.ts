import fs from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';

/**
 * An on-disk PGlite that syncs its commits to the disk, which PGlite does not do by default: it starts
 * PostgreSQL with `-F` (fsync off), and the Emscripten file system that maps its data directory onto
 * Node's `fs` (NODEFS) has no `fsync` — a commit reaches the OS page cache and nothing more. A crash of
 * the process loses nothing that way, but a crash of the machine (power cut, kernel panic) can lose
 * orders the pipeline already acknowledged on the stream, or leave the directory unreadable.
 *
 * So PostgreSQL keeps fsync on, with `wal_sync_method=fsync` (Emscripten's `fdatasync` returns without
 * doing anything; its `fsync` calls the file system's), and NODEFS gets the `fsync` it lacks, before
 * PostgreSQL starts: `fs.fsyncSync` on the real file descriptor. A commit then costs one fsync of the
 * WAL (the pipeline commits batches of up to 2,000 orders), a checkpoint one per file it wrote.
 */
export async function createSyncedPGlite(pglite: typeof PGlite, dataDir: string): Promise<PGlite> {
  return pglite.create({ fs: new SyncedNodeFS(dataDir), startParams: durableStartParams(pglite) });
}

/** PGlite's start parameters without `-F` (fsync off), syncing the WAL with fsync(). */
function durableStartParams(pglite: typeof PGlite): string[] {
  return [...pglite.defaultStartParams.filter((param) => param !== '-F'), '-c', 'wal_sync_method=fsync'];
}

/** The parts of Emscripten's module this reaches into (not in PGlite's public types). */
interface EmscriptenModule {
  NODEFS?: { stream_ops?: { fsync?: (stream: { nfd?: unknown }) => number } };
  FS: { ErrnoError: new (errno: number) => Error };
}

/**
 * Emscripten's (WASI's) errno numbers for what fsync can fail with. PostgreSQL treats a failed fsync
 * as fatal (its data_sync_retry rule), except EBADF and EINVAL on a directory, which some file systems
 * answer to fsyncing one: those keep their meaning, anything else is EIO.
 */
const ERRNO: Record<string, number> = { EBADF: 8, EINVAL: 28 };
const EIO = 29;

/** PGlite's NODEFS with an fsync: every file of the data directory shares NODEFS's stream operations. */
class SyncedNodeFS extends NodeFS {
  override async init(...args: Parameters<NodeFS['init']>): ReturnType<NodeFS['init']> {
    const { emscriptenOpts } = await super.init(...args);
    const giveFsync = (mod: unknown) => {
      const { NODEFS, FS } = mod as EmscriptenModule;
      const ops = NODEFS?.stream_ops;
      // A PGlite whose internals differ is refused at start rather than run without the sync asked for.
      if (!ops) {
        throw new Error(
          "this PGlite version's file system could not be given an fsync; run with --durability memory or DATABASE_URL",
        );
      }
      ops.fsync = (stream) => {
        try {
          fs.fsyncSync(stream.nfd as number);
        } catch (error) {
          throw new FS.ErrnoError(ERRNO[(error as NodeJS.ErrnoException).code ?? ''] ?? EIO);
        }
        return 0;
      };
    };
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), giveFsync] } };
  }
}
