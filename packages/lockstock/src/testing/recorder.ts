/**
 * The exclusion probe's shared state, in two files of a directory the suite makes for each run — no
 * server but the backend's own. Sections of every contender (OS processes or clients of one process):
 *
 * - `counter`: a number every exclusive section increments non-atomically — read, yield, write at
 *   offset 0 — so only mutual exclusion keeps it exact (a lost update shows an overlap the locks let
 *   through, even one too short for the recorded intervals to show);
 * - `inside.log`: opened O_APPEND, one line as a section starts (`+`) and one as it ends (`-`). Each
 *   line is one write(2) at the file's end, so the file's order is the order they happened in; the
 *   suite replays it to count how many sections were inside at once.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Digits of the counter (fixed width: a write at offset 0 replaces the whole number). */
const WIDTH = 12;

/** A run's directory: made with its empty counter; the caller removes it (`removeProbe`). */
export function makeProbe(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lockstock-contract-'));
  const fd = openSync(join(dir, 'counter'), 'w');
  writeSync(fd, '0'.padStart(WIDTH, '0'));
  closeSync(fd);
  closeSync(openSync(join(dir, 'inside.log'), 'a'));
  return dir;
}

export function removeProbe(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** One contender's view of a run's files. */
export class ProbeRecorder {
  private readonly counter: number;
  private readonly log: number;

  constructor(readonly dir: string) {
    this.counter = openSync(join(dir, 'counter'), 'r+');
    this.log = openSync(join(dir, 'inside.log'), 'a');
  }

  readCounter(): number {
    const buffer = Buffer.alloc(WIDTH);
    readSync(this.counter, buffer, 0, WIDTH, 0);
    return Number(buffer.toString('ascii'));
  }

  writeCounter(value: number): void {
    writeSync(this.counter, String(value).padStart(WIDTH, '0'), 0);
  }

  /** Logs that section `id` (unique in the run) is inside now. */
  enter(id: string): void {
    writeSync(this.log, `+${id}\n`);
  }

  /** Logs that section `id` is no longer inside. */
  exit(id: string): void {
    writeSync(this.log, `-${id}\n`);
  }

  /** How many sections are inside now, by the log. */
  insideNow(): number {
    return insideNow(this.dir);
  }

  close(): void {
    closeSync(this.counter);
    closeSync(this.log);
  }
}

/**
 * What a run's files say: the counter, for each section how many were inside as it entered, and the
 * sections inside at the log's most crowded moment (their ids, the first such moment).
 */
export function readProbe(dir: string): {
  counter: number;
  insideAtEntry: Map<string, number>;
  crowd: string[];
} {
  const recorder = new ProbeRecorder(dir);
  const counter = recorder.readCounter();
  recorder.close();
  const insideAtEntry = new Map<string, number>();
  const inside = new Set<string>();
  let crowd: string[] = [];
  for (const line of readFileSync(join(dir, 'inside.log'), 'utf8').split('\n')) {
    if (line.startsWith('+')) {
      inside.add(line.slice(1));
      insideAtEntry.set(line.slice(1), inside.size);
      if (inside.size > crowd.length) crowd = [...inside];
    } else if (line.startsWith('-')) inside.delete(line.slice(1));
  }
  return { counter, insideAtEntry, crowd };
}

/** How many sections are inside now, by the log (a section that lingers waits on it). */
export function insideNow(dir: string): number {
  let inside = 0;
  for (const line of readFileSync(join(dir, 'inside.log'), 'utf8').split('\n')) {
    if (line.startsWith('+')) inside++;
    else if (line.startsWith('-')) inside--;
  }
  return inside;
}
