import { describe, expect, it } from 'vitest';
import { LockUpgradeError } from '../../src/index.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

describe('read-write lock', () => {
  it('many readers at once, no writer among them', async () => {
    const [a, b] = [env.locks(), env.locks()];
    const rw = a.readWrite('rw-share');
    const readers = await Promise.all([
      rw.read.acquire({ owner: 'r1' }),
      rw.read.acquire({ owner: 'r2' }),
      b.readWrite('rw-share').read.acquire({ owner: 'r3' }),
    ]);
    expect((await rw.read.inspect()).holders).toBe(3);
    expect(await b.readWrite('rw-share').write.tryAcquire({ waitMs: 20 })).toBeUndefined();
    await Promise.all(readers.map((r) => r.release()));
    const writer = await b.readWrite('rw-share').write.acquire({ waitMs: 5_000 });
    expect(await rw.read.tryAcquire()).toBeUndefined();
    await writer.release();
  });

  it('a waiting writer is not starved by a stream of readers', async () => {
    const [a, b] = [env.locks(), env.locks()];
    const name = 'rw-starve';
    let stop = false;
    let readsAfterWriterQueued = -1;
    // Four reader loops keep the lock read-held without a gap: without writer preference a writer
    // would wait for as long as they run.
    const readerLoop = async (i: number) => {
      while (!stop) {
        const h = await a.readWrite(name).read.acquire({ owner: `reader-${i}` });
        if (readsAfterWriterQueued >= 0) readsAfterWriterQueued++;
        await new Promise((resolve) => setTimeout(resolve, 2));
        await h.release();
      }
    };
    const loops = [0, 1, 2, 3].map(readerLoop);
    const first = await a.readWrite(name).read.acquire({ owner: 'first-reader' });
    const writer = b.readWrite(name).write.acquire({ waitMs: 10_000 });
    readsAfterWriterQueued = 0;
    await first.release();
    const handle = await writer;
    stop = true;
    // The writer got in while the readers kept asking (a reader-preferring lock would time out here);
    // readers admitted meanwhile are those that were in flight before its intent landed.
    expect(readsAfterWriterQueued).toBeLessThan(50);
    await handle.release();
    await Promise.all(loops);
  });

  it('a writer downgrades: takes the read lock, releases the write lock, keeps reading', async () => {
    const [a, b] = [env.locks(), env.locks()];
    const rw = a.readWrite('rw-down');
    const read = await rw.write.run(async () => {
      const read = await rw.read.acquire({ waitMs: 1_000 }); // the same task holds the write lock
      expect(await b.readWrite('rw-down').read.tryAcquire({ owner: 'outsider' })).toBeUndefined(); // still write-locked
      return read;
    });
    // The write lock is gone; the task's read hold remains and others may read with it, not write.
    const other = await b.readWrite('rw-down').read.acquire({ owner: 'other', waitMs: 1_000 });
    expect(await b.readWrite('rw-down').write.tryAcquire({ owner: 'writer' })).toBeUndefined();
    await other.release();
    expect(await read.release()).toBe('released');
  });

  it('a reader whose lease ended is no holder: it counts for nobody, and its release says expired', async () => {
    const [a, b] = [env.locks(), env.locks()];
    const rw = a.readWrite('rw-lapsed');
    const reentered = await rw.read.run(async () => {
      const outer = await rw.read.acquire({ leaseMs: 2_000 });
      return [outer, await rw.read.acquire({ leaseMs: 2_000 })] as const; // re-entered: count 2
    });
    const live = await b.readWrite('rw-lapsed').read.acquire({ owner: 'live', leaseMs: 60_000 });
    expect((await rw.read.inspect()).holders).toBe(2);
    // Its lease ends on Redis's clock; no writer came by to drop its field.
    while ((await rw.read.inspect()).holders !== 1) await new Promise((resolve) => setImmediate(resolve));
    expect(await reentered[1].release()).toBe('expired');
    expect(await reentered[0].release()).toBe('expired');
    expect(await live.release()).toBe('released');
    expect(await rw.read.isLocked()).toBe(false);
  });

  it('an owner whose read lease ended starts over when it reads again: a new token, a live hold', async () => {
    const [a, b] = [env.locks(), env.locks()];
    const rw = a.readWrite('rw-again');
    const lapsed = await rw.read.acquire({ owner: 'returning', leaseMs: 200 });
    const live = await b.readWrite('rw-again').read.acquire({ owner: 'live', leaseMs: 60_000 });
    // Its lease ends on Redis's clock; its field stays (no writer came by to drop it).
    while ((await rw.read.inspect()).holders !== 1) await new Promise((resolve) => setImmediate(resolve));
    const again = await rw.read.acquire({ owner: 'returning', leaseMs: 60_000 });
    expect(again.fencingToken).toBeGreaterThan(live.fencingToken);
    expect((await rw.read.inspect()).holders).toBe(2);
    expect(await again.release()).toBe('released');
    expect(await lapsed.release()).toBe('expired');
    expect(await live.release()).toBe('released');
    expect(await rw.read.isLocked()).toBe(false);
  });

  it('a reader asking for the write lock gets LockUpgradeError instead of waiting for itself', async () => {
    const rw = env.locks().readWrite('rw-up');
    await rw.read.run(async () => {
      await expect(rw.write.acquire({ waitMs: 1_000 })).rejects.toBeInstanceOf(LockUpgradeError);
    });
    expect(await rw.read.isLocked()).toBe(false);
  });

  it("a reader's tryAcquire of the write side answers undefined (Redisson's tryLock: false)", async () => {
    const rw = env.locks().readWrite('rw-try-up');
    await rw.read.run(async () => {
      expect(await rw.write.tryAcquire()).toBeUndefined();
      expect(await rw.write.tryAcquire({ waitMs: 5_000 })).toBeUndefined(); // at once, not after 5 s
      expect(await rw.read.holdCount()).toBe(1);
    });
    expect(await rw.write.isLocked()).toBe(false);
  });

  it('each side answers isLocked and inspect for itself, and forceUnlock of one leaves the other', async () => {
    const locks = env.locks();
    const rw = locks.readWrite('rw-sides');
    const reader = await rw.read.acquire({ owner: 'reader' });
    expect([await rw.read.isLocked(), await rw.write.isLocked()]).toEqual([true, false]);
    expect((await rw.write.inspect()).holders).toBe(0);
    await reader.release();
    const writer = await rw.write.acquire({ owner: 'writer' });
    expect([await rw.read.isLocked(), await rw.write.isLocked()]).toEqual([false, true]);
    // A downgrade: the writer takes the read side too; each side is now held.
    const downgraded = await rw.read.acquire({ owner: 'writer' });
    expect([await rw.read.isLocked(), await rw.write.isLocked()]).toEqual([true, true]);
    expect(await locks.forceUnlock(rw.write)).toBe(true);
    expect([await rw.read.isLocked(), await rw.write.isLocked()]).toEqual([true, false]);
    expect(await writer.release()).toBe('expired');
    expect(await locks.forceUnlock(rw.read)).toBe(true);
    expect(await rw.read.isLocked()).toBe(false);
    expect(await downgraded.release()).toBe('expired');
  });
});
