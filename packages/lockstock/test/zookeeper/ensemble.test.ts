import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZooKeeperEnsemble, type ZooKeeperNode } from '@lockstock/servers';
import { ZooKeeperLockClient, type ConnectionLossPolicy } from '../../src/zookeeper/index.js';
import { memberOf } from '../helpers/zookeeper.js';

/**
 * Locks on a 3-node ZooKeeper ensemble (three JVMs, tick 500 ms) while members die: a follower the
 * holder is not connected to, then the very member it is connected to — where the connection-loss
 * policy decides (Curator's standard policy: lost at once; the session policy: kept if the session
 * moves to another member in time).
 */
let ensemble: ZooKeeperEnsemble;
const clients: ZooKeeperLockClient[] = [];
const client = (connectionLossPolicy: ConnectionLossPolicy = 'suspended') => {
  const made = new ZooKeeperLockClient({
    connectString: ensemble.connectString,
    sessionTimeoutMs: 6_000,
    connectionLossPolicy,
  });
  made.on('connectionError', () => undefined); // members die on purpose here
  clients.push(made);
  return made;
};
let unique = 0;
const lockName = (label: string) => `ensemble-${label}-${process.pid}-${++unique}`;

/** A client of `policy` holding `name`, connected to a follower (the driver picks a member at random). */
async function holderOnFollower(policy: ConnectionLossPolicy, name: string, on?: ZooKeeperNode) {
  for (let tries = 0; tries < 30; tries++) {
    const locks = client(policy);
    const hold = await locks.mutex(name).acquire({ waitMs: 10_000 });
    const member = await memberOf(ensemble.nodes, locks.sessionId);
    if (member && (on ? member === on : (await member.mode()) === 'follower')) return { locks, hold, member };
    await hold.release();
    await locks.close();
  }
  throw new Error('no client landed on the member wanted');
}

beforeAll(async () => {
  ensemble = await ZooKeeperEnsemble.start({ nodes: 3 });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await ensemble.stop();
});

describe('a ZooKeeper ensemble losing members', () => {
  it('the holder keeps its lock when a follower it is not connected to is killed', async () => {
    const name = lockName('follower');
    const { locks, hold, member } = await holderOnFollower('suspended', name);
    const leader = await ensemble.leader();
    const victim = ensemble.nodes.find((node) => node !== member && node !== leader)!;
    await victim.kill();
    await ensemble.waitForQuorum(); // two of three: still a quorum, same leader
    const other = client();
    expect(await other.mutex(name).tryAcquire({ waitMs: 1_000 })).toBeUndefined();
    expect(hold.signal.aborted).toBe(false);
    expect(locks.backend.session.connected).toBe(true);
    expect(await hold.release()).toBe('released');
    const next = await other.mutex(name).acquire({ waitMs: 5_000 });
    expect(next.fencingToken).toBeGreaterThan(hold.fencingToken);
    await next.release();
    await victim.restart();
  });

  it("the member it is connected to dies: 'suspended' loses the hold at once, 'lost' keeps it on another member", async () => {
    const [standard, session] = [lockName('standard'), lockName('session')];
    const a = await holderOnFollower('suspended', standard);
    const b = await holderOnFollower('lost', session, a.member);
    const killedAt = performance.now();
    await a.member.kill();
    // Standard policy: the connection is gone, so is the hold — the signal says so at once...
    if (!a.hold.signal.aborted) {
      await new Promise((resolve) => a.hold.signal.addEventListener('abort', resolve, { once: true }));
    }
    const lostAfterMs = performance.now() - killedAt;
    expect(a.hold.lostError).toMatchObject({ reason: 'session_lost' });
    expect((a.hold.lostError!.cause as Error).message).toMatch(/connection to ZooKeeper was lost/);
    // ...and its node is deleted once the client is back (its session lived on another member), so
    // the lock is free long before the session would have expired.
    const other = client();
    const taken = await other.mutex(standard).acquire({ waitMs: 5_000 });
    expect(taken.fencingToken).toBeGreaterThan(a.hold.fencingToken);
    // Session policy: the session moved to another member within its timeout; the hold is intact.
    await expect.poll(() => b.locks.backend.session.connected, { timeout: 5_000 }).toBe(true);
    expect(b.hold.signal.aborted).toBe(false);
    expect(await memberOf(ensemble.nodes, b.locks.sessionId)).not.toBe(a.member);
    expect(await other.mutex(session).tryAcquire({ waitMs: 500 })).toBeUndefined();
    expect(await b.hold.release()).toBe('released');
    console.info(`'suspended' holder's signal aborted ${Math.round(lostAfterMs)} ms after its member died`);
    await Promise.all([taken.release(), a.hold.release()]);
    await a.member.restart();
  });
});
