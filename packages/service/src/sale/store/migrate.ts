import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readAsset } from '../../support/assets.js';
import type { Database } from './db.js';

const migrationsDir = new URL('./migrations/', import.meta.url);

/** The numbered migrations shipped in migrations/ (NNN_name.sql), in order. */
export function listMigrations(): Array<{ version: number; name: string; sql: string }> {
  return readdirSync(fileURLToPath(migrationsDir))
    .filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 3)),
      name: file,
      sql: readAsset(new URL(file, migrationsDir)),
    }));
}

/**
 * Applies the migrations not applied yet, each in its own transaction, under an advisory lock so that
 * several processes starting at once do not race. Returns the names applied now.
 */
export async function migrate(db: Database): Promise<string[]> {
  await db.exec(`CREATE TABLE IF NOT EXISTS lockstock_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  const applied: string[] = [];
  for (const migration of listMigrations()) {
    const done = await db.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('lockstock_migrations'))");
      const seen = await tx.query('SELECT 1 FROM lockstock_migrations WHERE version = $1', [
        migration.version,
      ]);
      if (seen.rowCount > 0) return false;
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO lockstock_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      return true;
    });
    if (done) applied.push(migration.name);
  }
  return applied;
}
