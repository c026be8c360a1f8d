import fs, { mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pgliteDatabase, type Database } from '../../src/sale/store/db.js';

// PGlite on its own never syncs a commit to the disk (PostgreSQL runs with -F, and its Emscripten
// file system has no fsync): these check, from the system calls made, that the embedded order store
// does when durability asks for it — and that nothing else changes when it does not.
const dirs: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function newDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lockstock-pglite-'));
  dirs.push(dir);
  return dir;
}

/** The files fs.fsyncSync is called on from now, by real path. */
function recordSyncs(): string[] {
  const original = fs.fsyncSync.bind(fs);
  const synced: string[] = [];
  vi.spyOn(fs, 'fsyncSync').mockImplementation((fd: number) => {
    synced.push(readlinkSync(`/proc/self/fd/${fd}`));
    original(fd);
  });
  return synced;
}

async function commit(db: Database, times: number): Promise<void> {
  for (let i = 0; i < times; i++) await db.query('INSERT INTO scratch VALUES ($1)', [i]);
}

describe('the embedded order store on disk', () => {
  it('with fsync, PostgreSQL keeps fsync on and every commit syncs its WAL to the disk', async () => {
    const dir = newDir();
    const db = await pgliteDatabase(dir, { fsync: true });
    try {
      const settings = await db.query<{ name: string; setting: string }>(
        `SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'wal_sync_method')`,
      );
      expect(Object.fromEntries(settings.rows.map((r) => [r.name, r.setting]))).toEqual({
        fsync: 'on',
        wal_sync_method: 'fsync',
      });
      await db.exec('CREATE TABLE scratch (n integer)');
      const synced = recordSyncs();
      await commit(db, 5);
      const wal = synced.filter((path) => path.startsWith(join(dir, 'pg_wal')));
      expect(wal.length).toBeGreaterThanOrEqual(5);
    } finally {
      await db.close();
    }
    // And what was committed is there after a restart on the same directory.
    const reopened = await pgliteDatabase(dir, { fsync: true });
    try {
      expect((await reopened.query('SELECT n FROM scratch')).rows).toHaveLength(5);
    } finally {
      await reopened.close();
    }
  });

  it('a checkpoint syncs the data files it wrote', async () => {
    const dir = newDir();
    const db = await pgliteDatabase(dir, { fsync: true });
    try {
      await db.exec('CREATE TABLE scratch (n integer)');
      await commit(db, 3);
      const synced = recordSyncs();
      await db.exec('CHECKPOINT');
      expect(synced.some((path) => path.startsWith(join(dir, 'base')))).toBe(true);
    } finally {
      await db.close();
    }
  });

  it("without fsync (durability memory): PGlite's own behaviour, nothing synced", async () => {
    const db = await pgliteDatabase(newDir());
    try {
      await db.exec('CREATE TABLE scratch (n integer)');
      const synced = recordSyncs();
      await commit(db, 5);
      await db.exec('CHECKPOINT');
      expect(synced).toEqual([]);
    } finally {
      await db.close();
    }
  });
});
