import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalLockClient } from '../../src/local/index.js';

// The local backend keeps each hold's holder metadata in memory: inspect().heldBy names it.
describe('local holder metadata', () => {
  const clients: LocalLockClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  it('inspect() names the holder, its label and since when; a re-entry keeps the first record', async () => {
    const client = new LocalLockClient({ namespace: `holder-${process.pid}` });
    const other = new LocalLockClient({ namespace: `holder-${process.pid}` });
    clients.push(client, other);
    const lock = client.reentrant('report');
    expect((await other.reentrant('report').inspect()).heldBy).toEqual([]);
    const before = Date.now();
    const outer = await lock.acquire({ owner: 'job-1', label: 'nightly' });
    const inner = await lock.acquire({ owner: 'job-1', label: 'other' });
    const [holder, ...rest] = (await other.reentrant('report').inspect()).heldBy ?? [];
    expect(rest).toEqual([]);
    expect(holder).toMatchObject({ owner: 'job-1', host: hostname(), pid: process.pid, label: 'nightly' });
    expect(holder!.acquiredAt).toBeGreaterThanOrEqual(before);
    await inner.release();
    await outer.release();
    expect((await lock.inspect()).heldBy).toEqual([]);
  });

  it('a semaphore lists every holder; a bad label is refused', async () => {
    const client = new LocalLockClient({ namespace: `holder-sem-${process.pid}` });
    clients.push(client);
    const semaphore = client.semaphore('pool', { permits: 2 });
    const a = await semaphore.acquire({ owner: 'a', label: 'first' });
    const b = await semaphore.acquire({ owner: 'b' });
    const heldBy = (await semaphore.inspect()).heldBy ?? [];
    expect(heldBy.map((h) => [h.owner, h.label])).toEqual([
      ['a', 'first'],
      ['b', undefined],
    ]);
    await expect(semaphore.acquire({ label: 'x'.repeat(65) })).rejects.toThrow(/label/);
    await expect(semaphore.acquire({ label: 'a\nb' })).rejects.toThrow(/label/);
    await Promise.all([a.release(), b.release()]);
  });
});
