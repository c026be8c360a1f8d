/** The contract's check of what the diagnostics channels publish about one acquire and release. */
import assert from 'node:assert/strict';
import diagnostics_channel from 'node:diagnostics_channel';
import { LOCK_CHANNELS } from '../locks/core/diagnostics.js';
import type { Lock } from '../locks/types.js';
import { assertFields } from './check.js';

type Seen = { event: string; message: Record<string, unknown> };

/**
 * Records what the diagnostics channels publish about locks whose names start with `name` (each
 * message copied as it was when published) while `fn` runs.
 */
async function recordChannels(name: string, fn: () => Promise<void>): Promise<Seen[]> {
  const seen: Seen[] = [];
  const record = (event: string) => (message: unknown) => {
    const fields = message as Record<string, unknown>;
    if (String(fields.name).startsWith(name)) seen.push({ event, message: { ...fields } });
  };
  const tracing = {
    start: record('start'),
    end: record('end'),
    asyncStart: record('asyncStart'),
    asyncEnd: record('asyncEnd'),
    error: record('error'),
  };
  const acquire = diagnostics_channel.tracingChannel(LOCK_CHANNELS.acquire);
  const plain = Object.entries(LOCK_CHANNELS)
    .filter(([event]) => event !== 'acquire')
    .map(([event, channel]) => [channel, record(event)] as const);
  acquire.subscribe(tracing);
  for (const [channel, listener] of plain) diagnostics_channel.subscribe(channel, listener);
  try {
    await fn();
  } finally {
    acquire.unsubscribe(tracing);
    for (const [channel, listener] of plain) diagnostics_channel.unsubscribe(channel, listener);
  }
  return seen;
}

const keys = (message: Record<string, unknown>) => Object.keys(message).sort();

/** One acquire and release of `lock` (named `name`; `parts` locks of its own: a multi-lock's two). */
export async function checkChannels(lock: Lock, name: string, parts: number): Promise<void> {
  const seen = await recordChannels(name, async () => {
    const handle = await lock.acquire({ waitMs: 5_000 });
    assert.equal(await handle.release(), 'released');
  });
  // One acquire per lock (a multi-lock's parts each report their own), the same shape everywhere.
  const names = [...new Set(seen.map((s) => s.message.name as string))];
  assert.equal(names.length, parts);
  for (const part of names) {
    const mine = seen.filter((s) => s.message.name === part);
    assert.deepEqual(
      mine.map((s) => s.event),
      ['start', 'end', 'asyncStart', 'asyncEnd', 'release', 'hold'],
    );
    const [start, , , done, release, hold] = mine.map((s) => s.message) as Array<Record<string, unknown>>;
    assert.deepEqual(keys(start!), ['backend', 'kind', 'name', 'owner', 'waitLimitMs']);
    // (A multi-lock's part is given what is left of the wait.)
    const waitLimitMs = start!.waitLimitMs as number;
    assert.ok(waitLimitMs > 4_000 && waitLimitMs <= 5_000, `waitLimitMs ${waitLimitMs}`);
    for (const message of [start, done, release, hold]) {
      assertFields(message, { name: part, kind: start!.kind, backend: start!.backend, owner: start!.owner });
    }
    assert.equal(typeof start!.kind, 'string');
    assert.match(String(start!.backend), /^[a-z-]+$/);
    assert.deepEqual(
      keys(done!),
      [...keys(start!), 'fencingToken', 'handle', 'outcome', 'result', 'waitMs'].sort(),
    );
    assertFields(done, { outcome: 'acquired' });
    assert.equal(typeof done!.fencingToken, 'number');
    assert.ok((done!.waitMs as number) >= 0);
    assert.equal(done!.result, done!.handle);
    assert.deepEqual(
      keys(release!),
      ['backend', 'fencingToken', 'handle', 'heldMs', 'kind', 'name', 'outcome', 'owner', 'releaseMs'].sort(),
    );
    assertFields(release, { outcome: 'released', fencingToken: done!.fencingToken, handle: done!.handle });
    assert.ok((release!.releaseMs as number) >= 0);
    assert.deepEqual(
      keys(hold!),
      ['backend', 'ended', 'fencingToken', 'handle', 'heldMs', 'kind', 'name', 'outcome', 'owner'].sort(),
    );
    assertFields(hold, {
      ended: 'released',
      outcome: 'released',
      fencingToken: done!.fencingToken,
      handle: done!.handle,
    });
    assert.ok((hold!.heldMs as number) >= 0);
  }
}
