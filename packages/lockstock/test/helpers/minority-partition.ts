import { expect } from 'vitest';
import { checkLockHistory, type HistoryEvent, type LockCheckReport } from '../../src/checker/index.js';
import type { LockClient, LockHandle } from '../../src/index.js';
import { mergeHistories, msSince, type LossReport } from './crash.js';
import type { Contender } from './processes.js';
import { HistoryRecorder } from './recorder.js';

/** One session backend's cluster, for the minority-partition row (etcd, ZooKeeper). */
export interface MinorityPartition {
  readonly name: string;
  /** A holder process connected to the member that will be cut off only, holding `name`. */
  readonly holder: Contender;
  /** A client on the other members (the majority). */
  readonly waiter: LockClient;
  readonly waitMs: number;
  /** Resolves once the waiter is queued behind the holder in the store. */
  queued(): Promise<void>;
  /** The member in words, for the history's fault events. */
  readonly member: string;
  /** Cuts the member off from the others (both ways). */
  isolate(): void;
  /** A write through the store's fence with `handle`'s token: accepted or not. */
  fencedWrite(handle: LockHandle): Promise<boolean>;
  /** Heals the cut; resolves once the member may serve again. */
  heal(): Promise<void>;
  /** A client on the healed member alone. */
  rejoined(): LockClient;
  /** What the holder process recorded. */
  eventsOf(owner: unknown): HistoryEvent[];
}

export interface MinorityPartitionOutcome {
  readonly report: LockCheckReport;
  /** From the cut to the holder's loss, to the majority's grant; from the heal to the next grant, ms. */
  readonly lostAfterMs: number;
  readonly takenAfterMs: number;
  readonly liveAfterMs: number;
}

/**
 * Fault row `partition-minority`: the holder's member is cut off into a minority while a majority
 * client waits. The holder must be told its hold is lost, the majority's client be granted with a
 * greater token and write through the fence, and after healing a client on the cut-off member alone
 * has the lock again. Judged by the strict checker from what the clients recorded.
 */
export async function minorityPartitionRow(row: MinorityPartition): Promise<MinorityPartitionOutcome> {
  const { name } = row;
  const { token, owner } = await row.holder.next('holding');
  const recorder = new HistoryRecorder();
  const waiting = recorder.acquire('majority', name, () =>
    row.waiter.mutex(name).acquire({ owner: 'majority', waitMs: row.waitMs }),
  );
  await row.queued();
  recorder.fault('partition', `${row.member} cut off from the other members`);
  const cutAt = process.hrtime.bigint();
  row.isolate();
  const second = await waiting;
  const takenAfterMs = msSince(cutAt);
  expect(second.fencingToken).toBeGreaterThan(token as number);
  recorder.resourceAnswered(`fenced/${name}`, await row.fencedWrite(second), second);
  row.holder.send({ type: 'release' });
  const released = await row.holder.next('released');
  const lost = released.lost as LossReport;
  expect(lost.reason).toBe('session_lost');
  const lostAfterMs = Number(BigInt(lost.at) - cutAt) / 1e6;
  await recorder.release('majority', name, second);

  // Healed: the cut-off member rejoins, and a client on it alone has the lock again.
  recorder.fault('heal', `${row.member} reconnected`);
  const healedAt = process.hrtime.bigint();
  await row.heal();
  const rejoined = row.rejoined();
  const third = await recorder.acquire('after-heal', name, () =>
    rejoined.mutex(name).acquire({ owner: 'after-heal', waitMs: 60_000 }),
  );
  const liveAfterMs = msSince(healedAt);
  expect(third.fencingToken).toBeGreaterThan(second.fencingToken);
  await recorder.release('after-heal', name, third);

  const report = checkLockHistory(mergeHistories(recorder.events, row.eventsOf(owner)), { strict: true });
  expect(report.valid).toBe(true); // the holder was told before the majority's client had the lock
  expect(report.checks.fence).toMatchObject({ acceptedStale: 0 });
  return { report, lostAfterMs, takenAfterMs, liveAfterMs };
}
