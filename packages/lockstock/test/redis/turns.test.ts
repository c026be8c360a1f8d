import { describe, expect, it } from 'vitest';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

/** Resolves once a queue of waiting clients has `count` members (state observed on the server). */
async function queued(name: string, count: number, queue = `ls:{${name}}:queue`): Promise<string[]> {
  for (;;) {
    const members = await env.redis.zrange(queue, 0, -1);
    if (members.length >= count) return members;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('turns between clients', () => {
  it('a released lock goes to the client that has waited longest', async () => {
    const [a, b, c] = [env.locks(), env.locks(), env.locks()];
    const name = 't-fifo';
    const held = await a.mutex(name).acquire();
    const order: string[] = [];
    const bWaits = b
      .mutex(name)
      .acquire()
      .then(async (h) => (order.push('b'), h.release()));
    await queued(name, 1);
    const cWaits = c
      .mutex(name)
      .acquire()
      .then(async (h) => (order.push('c'), h.release()));
    await queued(name, 2);
    const aAgain = a
      .mutex(name)
      .acquire()
      .then(async (h) => (order.push('a'), h.release()));
    await held.release();
    await Promise.all([bWaits, cWaits, aAgain]);
    expect(order).toEqual(['b', 'c', 'a']);
  });

  it('a turn given to a client that is gone costs one turn window, not a lease', async () => {
    const [a, b] = [env.locks(), env.locks()];
    const name = 't-dead';
    const held = await a.mutex(name).acquire({ leaseMs: 60_000 });
    const bWaits = b.mutex(name).acquire();
    await queued(name, 1);
    // A client that queued and then died, ahead of b.
    await env.redis.zadd(`ls:{${name}}:queue`, 0, 'dead-client');
    // What the release published, recorded by a subscriber of the lock's wake-up channel.
    const listener = env.redis.duplicate();
    await listener.ssubscribe(`ls:{${name}}:unlock`);
    const published = new Promise<string>((resolve) =>
      listener.once('smessage', (_channel, message) => resolve(message)),
    );
    const releasedAt = performance.now();
    await held.release();
    const [[, reserved], [, ttl]] = (await env.redis
      .multi()
      .get(`ls:{${name}}`)
      .pttl(`ls:{${name}}`)
      .exec()) as [[null, string | null], [null, number]];
    expect(await published).toBe('t:dead-client'); // the turn went to the dead client
    listener.disconnect();
    // Reserved for it, for one turn window from the release: only a look within that window can see
    // the reservation itself (a slower look finds it gone, as it should be).
    if (performance.now() - releasedAt < 100) {
      expect(reserved).toBe('\0turn:dead-client');
      expect(ttl).toBeLessThanOrEqual(100);
    }
    const handle = await bWaits; // after the dead client's turn window (100 ms) runs out
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    await handle.release();
  });

  it('within one client, waiters are served in FIFO order', async () => {
    const locks = env.locks();
    const lock = locks.mutex('t-local');
    const held = await lock.acquire();
    const order: number[] = [];
    const waiters = [0, 1, 2, 3, 4].map((i) =>
      lock.acquire().then(async (h) => (order.push(i), h.release())),
    );
    await held.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });

  it("a lock passing between one client's waiters yields to another client within the hand-off window", async () => {
    // Four callers of a keep the lock busy: each release has a local waiter to hand it to, so only
    // the hand-off window (localHandoffWindowMs, kept by the Redis adapter: turns.ts) lets b in: b
    // must get the lock while a's callers still contend. Without the window it never would (a's
    // callers give up after 20 s, and the check below fails).
    const a = env.locks({ localHandoffWindowMs: 20 });
    const b = env.locks();
    const name = 't-window';
    let bHeld = false;
    let aGaveUp = false;
    let aSections = 0;
    const first = await a.mutex(name).acquire();
    const bWaits = b.mutex(name).acquire({ waitMs: 30_000 });
    await queued(name, 1); // b's client waits in the turn queue
    const loop = async () => {
      const stopAt = performance.now() + 20_000;
      while (!bHeld) {
        if (performance.now() > stopAt) return void (aGaveUp = true);
        const handle = await a.mutex(name).acquire({ waitMs: 20_000 });
        aSections++;
        await new Promise((resolve) => setImmediate(resolve));
        await handle.release();
      }
    };
    const loops = [loop(), loop(), loop(), loop()];
    await queued(name, 2); // a's head waits too
    await first.release(); // handed to a's head: the streak begins
    const handle = await bWaits;
    bHeld = true;
    expect(aGaveUp).toBe(false); // b got in while a's callers still contended
    expect(aSections).toBeGreaterThan(0); // after a had handed the lock on locally
    await handle.release();
    await Promise.all(loops);
  });

  it('many callers of one client keep handing the lock on without stalling', async () => {
    // A hand-off that reaches a waiter while its own attempt is in flight must not be slept through
    // (it was, once: the waiter slept for the holder's whole lease). The race is likeliest while a new
    // client's subscription is still being set up, so every round uses a fresh client.
    // waitMs turns a stall into a failure instead of a hang.
    let sections = 0;
    for (let round = 0; round < 20; round++) {
      const lock = env.locks({ watchdogTimeoutMs: 60_000 }).mutex(`t-stall-${round}`);
      const loop = async () => {
        for (let i = 0; i < 5; i++) {
          const handle = await lock.acquire({ waitMs: 10_000 });
          sections++;
          await new Promise((resolve) => setTimeout(resolve, 1));
          await handle.release();
        }
      };
      await Promise.all([loop(), loop(), loop()]);
    }
    expect(sections).toBe(20 * 3 * 5);
  });
});

/** How many SPUBLISH calls the server has run (scripts' included). */
async function publishes(): Promise<number> {
  const stats = await env.redis.info('commandstats');
  return Number(/cmdstat_spublish:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

describe('semaphore turns between clients', () => {
  const queueOf = (name: string) => `ls:{${name}}:semaphore:queue`;

  it('a release hands its permit to a waiter of the same client in the script: nobody is woken', async () => {
    const semaphore = env.locks().semaphore('s-local', { permits: 1 });
    const held = await semaphore.acquire();
    const waiting = semaphore.acquire({ waitMs: 10_000 });
    await queued('s-local', 1, queueOf('s-local'));
    const before = await publishes();
    await held.release();
    const handle = await waiting;
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    expect(await publishes()).toBe(before);
    await handle.release();
    expect(await semaphore.available()).toBe(1);
  });

  it('a released permit goes to the client that has waited longest', async () => {
    const [a, b, c] = [env.locks(), env.locks(), env.locks()];
    const name = 's-fifo';
    const sem = (client: typeof a) => client.semaphore(name, { permits: 1 });
    const held = await sem(a).acquire();
    const order: string[] = [];
    const take = (client: typeof a, label: string) =>
      sem(client)
        .acquire({ waitMs: 10_000 })
        .then(async (h) => (order.push(label), h.release()));
    const bWaits = take(b, 'b');
    await queued(name, 1, queueOf(name));
    const cWaits = take(c, 'c');
    await queued(name, 2, queueOf(name));
    const aAgain = take(a, 'a'); // not waiting yet when the release runs: it queues behind c
    await held.release();
    await Promise.all([bWaits, cWaits, aAgain]);
    expect(order).toEqual(['b', 'c', 'a']);
  });

  it('a permit reserved for a client that is gone comes back after one turn window', async () => {
    const [a, b] = [env.locks(), env.locks()];
    const name = 's-dead';
    const held = await a.semaphore(name, { permits: 1 }).acquire({ leaseMs: 60_000 });
    const bWaits = b.semaphore(name, { permits: 1 }).acquire({ waitMs: 10_000 });
    await queued(name, 1, queueOf(name));
    await env.redis.zadd(queueOf(name), 0, 'dead-client'); // queued, then died, ahead of b
    await held.release();
    const turnEnds = Number(await env.redis.zscore(`ls:{${name}}:semaphore`, '\0turn:dead-client'));
    const redisNow = Number((await env.redis.time())[0]) * 1000;
    expect(turnEnds - redisNow).toBeLessThanOrEqual(1_100); // the turn window (100 ms), second-granular clock
    const handle = await bWaits;
    expect(handle.fencingToken).toBe(held.fencingToken + 1);
    await handle.release();
  });

  it('a release under contention frees a reservation that lapsed untaken and wakes the other clients', async () => {
    // Permits pass from release to release without an acquire under contention, so no acquire would
    // drop a lapsed turn; b's retry time is a lease away (30 s), beyond its waitMs.
    const [a, b] = [env.locks(), env.locks()];
    const name = 's-lapsed';
    const permits = `ls:{${name}}:semaphore`;
    const sem = (client: typeof a) => client.semaphore(name, { permits: 3 });
    const [h1, h2] = [await sem(a).acquire(), await sem(a).acquire()];
    await env.redis.zadd(permits, Date.now() + 60_000, '\0turn:dead-client'); // the third permit, reserved
    const bWaits = sem(b).acquire({ waitMs: 10_000 });
    const local = sem(a).acquire({ waitMs: 10_000 }); // a's own waiter: h1's release hands it over
    await queued(name, 2, queueOf(name));
    await env.redis.zadd(permits, 'XX', 1, '\0turn:dead-client'); // its window has passed, untaken
    await h1.release();
    const [handle, handedOver] = await Promise.all([bWaits, local]);
    expect(handedOver.fencingToken).toBeGreaterThan(h2.fencingToken);
    await Promise.all([handle.release(), handedOver.release(), h2.release()]);
  });
});
