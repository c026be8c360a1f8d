import { appendFileSync, readFileSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Redis 7's append-only file, as a power loss sees it: the incremental file that the manifest names
 * (`appendonlydir/<name>.<seq>.incr.aof`, plain commands) is where the last writes are; everything a
 * crash of the machine can lose is at its tail. Redis must be stopped while the tail is cut.
 */
export function incrementalAof(redisDir: string): string {
  const dir = join(redisDir, 'appendonlydir');
  const manifest = readFileSync(join(dir, 'appendonly.aof.manifest'), 'utf8');
  const files = [...manifest.matchAll(/^file (\S+) seq (\d+) type i$/gm)].map((m) => ({
    name: m[1] as string,
    seq: Number(m[2]),
  }));
  const last = files.sort((a, b) => b.seq - a.seq)[0];
  if (!last) throw new Error(`no incremental AOF in ${dir}:\n${manifest}`);
  return join(dir, last.name);
}

/** Bytes written to the incremental AOF so far (Redis writes it before it replies). */
export function aofSize(redisDir: string): number {
  return statSync(incrementalAof(redisDir)).size;
}

/**
 * Cuts the incremental AOF back to `size` bytes, as if the machine had crashed with only that much on
 * disk. A cut inside a command (or inside a MULTI block) is what `aof-load-truncated yes`, Redis's
 * default, takes back to the last whole command. Returns the bytes cut.
 */
export function cutAofTail(redisDir: string, size: number): number {
  const file = incrementalAof(redisDir);
  const before = statSync(file).size;
  if (size >= before) return 0;
  truncateSync(file, size);
  return before - size;
}

/**
 * Appends half of a command to the incremental AOF: the write a power loss tore in two while Redis was
 * writing it. Under `appendfsync always` that is all a crash can lose (Redis fsyncs before it replies,
 * so the torn write was never acknowledged); Redis drops it when it loads the file.
 */
export function tearAofTail(redisDir: string): number {
  const file = incrementalAof(redisDir);
  const torn = '*3\r\n$3\r\nSET\r\n$4\r\ntorn\r\n$5\r\nwri';
  appendFileSync(file, torn);
  return torn.length;
}
