import { setTimeout as delay } from 'node:timers/promises';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { aofSize, cutAofTail, tearAofTail } from '../../helpers/aof.js';
import { Redis } from 'ioredis';
import { signToken } from '../../../src/http/auth.js';
import { Load } from './buyers.js';
import { saleKeys } from '../../../src/sale/keys.js';
import { checkRow, type CheckName, type RowReport, type SaleFacts } from './checker.js';
import type { FaultCluster, FaultClusterOptions, PipelineBlock } from './cluster.js';
import { History } from './history.js';
import { backlog, heldByPipelines, readFinalState, waitForDrain } from './record.js';

/**
 * One fault row: what is done to which part of the running service, for how long, and how it is
 * undone. Rows that are unsafe by design (e.g. Redis restarted without persistence) name the checks
 * the checker must flag: the row passes only if it does, and every other check holds.
 */
export interface FaultRow {
  readonly name: string;
  /** For the README table: the fault, as done. */
  readonly fault: string;
  /** The process or server the fault hits. */
  readonly target: string;
  /** How long the fault lasts before it is undone, ms. */
  readonly holdMs: number;
  inject(cluster: FaultCluster, context: RowContext): Promise<void>;
  /** Undoes the fault; resolves when the faulted part is back (restarted and serving). */
  heal(cluster: FaultCluster, context: RowContext): Promise<void>;
  /** Before the row's load starts (a setting the fault needs); undone by restore() after the heal. */
  prepare?(cluster: FaultCluster, context: RowContext): Promise<void>;
  restore?(cluster: FaultCluster, context: RowContext): Promise<void>;
  /** Recovery is measured on this serve's answers (a restarted one); default: any. */
  readonly recoveryThrough?: string;
  /** Checks that must fail under this fault (the checker must see the violation). */
  readonly mustFail?: readonly CheckName[];
  /** Checks that may fail under this fault (a violation the fault can cause, not always does). */
  readonly mayFail?: readonly CheckName[];
  /** The row runs on a cluster of this shape, of its own (default: the suite's shared cluster). */
  readonly cluster?: Omit<FaultClusterOptions, 'secret'>;
  /** The row's load in the on-demand suite, instead of RunOptions' defaults. */
  readonly load?: Omit<RunOptions, 'secret' | 'historyDir'>;
}

/** What a row's steps may need to know about the run, and what they observed. */
export interface RowContext {
  readonly saleId: string;
  readonly options: RunOptions;
  /** Figures the row's steps observed (e.g. the backlog the pipelines held at the fault), reported. */
  readonly notes: Record<string, unknown>;
  /** The pipelines' writes held by the harness (released after the row, whatever happens). */
  block?: PipelineBlock;
}

/** The rows of the fault suite. Add a row here: the harness, checker and README table follow. */
export const ROWS: readonly FaultRow[] = [
  {
    name: 'serve-sigkill',
    fault: '`serve` SIGKILLed mid-load, restarted after the hold',
    target: 'serve-a',
    holdMs: 1000,
    inject: (c) => c.kill('serve-a'),
    heal: (c) => c.restart('serve-a'),
    recoveryThrough: 'serve-a',
  },
  {
    name: 'serve-sigstop',
    fault: '`serve` paused (SIGSTOP) for 4 s, then SIGCONT',
    target: 'serve-a',
    holdMs: 4000,
    inject: async (c) => c.signal('serve-a', 'SIGSTOP'),
    heal: async (c) => c.signal('serve-a', 'SIGCONT'),
    recoveryThrough: 'serve-a',
  },
  {
    // Mid-batch for sure: the worker is inside its transaction (waiting on the sale's row lock).
    name: 'worker-sigkill',
    fault: '`worker` SIGKILLed mid-batch (inside its transaction), restarted after the hold',
    target: 'worker',
    holdMs: 1000,
    inject: async (c, { saleId }) => {
      const release = await c.blockPipelineOn(saleId);
      await c.kill('worker');
      await release();
    },
    heal: (c) => c.restart('worker'),
  },
  {
    name: 'worker-sigstop',
    fault: '`worker` paused (SIGSTOP) for 4 s, then SIGCONT',
    target: 'worker',
    holdMs: 4000,
    inject: async (c) => c.signal('worker', 'SIGSTOP'),
    heal: async (c) => c.signal('worker', 'SIGCONT'),
  },
  {
    name: 'redis-restart-aof',
    fault: 'redis-server SIGKILLed, restarted after 1 s on the same AOF (appendfsync everysec)',
    target: 'redis',
    holdMs: 1000,
    inject: (c) => c.redis.kill(),
    heal: (c) => c.redis.restart(),
  },
  {
    // Redis lost everything (restarted without persistence, or on a replica that never had the sale):
    // every serve notices on its reconnection, the sale is rebuilt from the record (buyers and
    // Idempotency-Keys included, and what the pipelines hold: redis-restart-empty-backlog) before
    // anything is sold again. What Redis alone held — acknowledged orders no pipeline had read yet —
    // is gone: that is the loss window of a Redis without persistence, measured here, not hidden.
    name: 'redis-restart-empty',
    fault: 'redis-server SIGKILLed and restarted after 1 s with its data gone (no persistence)',
    target: 'redis',
    holdMs: 1000,
    inject: async (c) => {
      await c.redis.kill();
      rmSync(join(c.redis.dir, 'appendonlydir'), { recursive: true, force: true });
      rmSync(join(c.redis.dir, 'dump.rdb'), { force: true });
    },
    heal: (c) => c.redis.restart(),
    mayFail: ['lostAcknowledged'],
  },
  {
    // What an OS crash does under `appendfsync everysec`: the last second of the AOF never reached
    // the disk. Redis comes back older than the record (which recorded some of that second): the
    // serves see the stream's last id below the record's newest entry and rebuild the sale before
    // selling, so nothing the record holds is sold again. Orders of that second the record had not
    // recorded yet are lost — the loss window of `--durability memory`.
    name: 'redis-aof-tail-cut',
    fault:
      'redis-server SIGKILLed and restarted on an AOF whose last second was cut (an OS crash under appendfsync everysec)',
    target: 'redis',
    holdMs: 1000,
    inject: async (c) => {
      const kept = aofSize(c.redis.dir);
      await delay(1000); // the second of writes the crash loses (buyers keep buying meanwhile)
      await c.redis.kill();
      cutAofTail(c.redis.dir, kept);
    },
    heal: (c) => c.redis.restart(),
    mayFail: ['lostAcknowledged'],
  },
  {
    // Issue 35, defect 10: the rollback a check right after the restart cannot see. The pipelines hold,
    // read and unrecorded, batches of reservations that the crash then cuts from the AOF; the record's
    // newest entry is older than Redis's last one, so Redis looks as far along as the record. A serve
    // that sold again at once sold those units a second time, and when the held batches were recorded
    // their buyers' orders — or later ones — were rejected (880 buyers told 202 in the outside run).
    // Every serve must first make the pipelines record what they hold (the recovery fence), then
    // compare: it finds Redis behind and rebuilds. The harness holds the pipelines' writes from before
    // the part of the AOF the crash loses, and lets them go once the sale sold again or a fence was up
    // for a second.
    name: 'redis-aof-tail-cut-backlog',
    fault:
      'redis-server SIGKILLed while the order pipelines hold reservations of its last second unrecorded (their PostgreSQL writes held), restarted on an AOF cut back to before them',
    target: 'redis',
    holdMs: 1000,
    cluster: { serves: 2, pipelinesPerServe: 1, workers: 0 },
    load: {
      stock: 3_000,
      ratePerSecond: 600,
      buyersBeforeFault: 1_000,
      backlogTarget: 600,
      issueAfterHealMs: 8_000,
      recoveryBoundMs: 5_000,
    },
    inject: async (c, context) => {
      let kept = 0;
      await holdBacklog(c, context, () => (kept = aofSize(c.redis.dir)));
      await c.redis.kill();
      context.notes.cutBytes = cutAofTail(c.redis.dir, kept);
    },
    heal: async (c, context) => {
      await c.redis.restart();
      await releaseOnceSoldOrFenced(c, context);
    },
    mayFail: ['lostAcknowledged'],
  },
  {
    // `--durability fsync` on an external Redis: `appendfsync always` (Redis fsyncs before it
    // answers). A power loss can then only tear the write in progress, which was never acknowledged.
    name: 'redis-aof-torn-fsync-always',
    fault:
      'redis-server with appendfsync always SIGKILLed, a torn write appended to its AOF, restarted after 1 s',
    target: 'redis',
    holdMs: 1000,
    prepare: async (c) => {
      await c.redisConfig('appendfsync', 'always');
    },
    inject: async (c) => {
      await c.redis.kill();
      tearAofTail(c.redis.dir);
    },
    // The restarted server runs its start arguments again (everysec): nothing to restore.
    heal: (c) => c.redis.restart(),
  },
  {
    // The worker is made to hold a transaction open (waiting on the sale's row lock) when the server
    // goes: the window in which node-postgres emits 'error' on a checked-out connection.
    name: 'postgres-immediate-stop',
    fault:
      'PostgreSQL `pg_ctl stop -m immediate` for 5 s (while a pipeline transaction is open), then started again',
    target: 'postgres',
    holdMs: 5000,
    inject: async (c, { saleId }) => {
      await c.blockPipelineOn(saleId); // released by the stop
      await c.postgres.stopImmediately();
    },
    heal: (c) => c.postgres.restart(),
  },
  {
    // Unsafe by design: a row that must fail, so the checker is seen to catch the fault. With
    // synchronous_commit off, COMMIT returns before the WAL is written; the pipeline acknowledges the
    // stream entries, and an immediate stop loses those orders. wal_writer_delay at its maximum
    // (10 s) leaves the commits since the last filled WAL page unwritten until the next page fills,
    // so the stop finds some whenever it comes, not only within the WAL writer's 200 ms (2-6 orders
    // lost in every run here). The suite fails if the checker finds none.
    name: 'postgres-immediate-stop-async-commit',
    fault:
      'PostgreSQL `pg_ctl stop -m immediate` for 2 s with `synchronous_commit = off` (and `wal_writer_delay = 10s`) on the server',
    target: 'postgres',
    holdMs: 2000,
    // The worker's sessions are opened after the setting (it applies to new sessions only).
    prepare: async (c) => {
      await c.postgresSetting('synchronous_commit', 'off');
      await c.postgresSystemSetting('wal_writer_delay', '10s');
      await c.restartGracefully('worker');
    },
    inject: (c) => c.postgres.stopImmediately(),
    heal: (c) => c.postgres.restart(),
    restore: async (c) => {
      await c.postgresSetting('synchronous_commit', null);
      await c.postgresSystemSetting('wal_writer_delay', null);
      await c.restartGracefully('worker');
    },
    // Every lost order took its unit from Redis, and the record does not hold it: unsold too.
    mustFail: ['lostAcknowledged', 'unsold'],
  },
  {
    // Issue 29: Redis restarted without persistence while the order pipelines held a backlog they had
    // read and not recorded (1,634 orders in the outside run). A rebuild that counted stock and
    // buyers from the record alone sold those units again, and forgot their buyers and
    // Idempotency-Keys: acknowledged orders were rejected later, users told 202 twice. Here the
    // backlog is made for sure: the harness holds the pipelines' writes (the sale's row lock) until a
    // backlog has built in the stream, lets those batches through and holds the next ones — full
    // batches, and the batches read ahead — measures what they hold (XPENDING), kills Redis, restarts
    // it empty, and lets the writes go on only once a rebuild has begun. The rebuild must count what
    // the pipelines hold before it sells anything. What Redis alone held (entries no pipeline had
    // read) is lost: the loss window of a Redis without persistence, measured.
    name: 'redis-restart-empty-backlog',
    fault:
      'redis-server SIGKILLed while the order pipelines hold a backlog (their PostgreSQL writes held), restarted after 1 s with its data gone; the writes go on once a rebuild has begun',
    target: 'redis',
    holdMs: 1000,
    cluster: { serves: 3, pipelinesPerServe: 1, workers: 0 },
    load: {
      stock: 15_000,
      ratePerSecond: 800,
      buyersBeforeFault: 5_000,
      backlogTarget: 3_000,
      issueAfterHealMs: 12_000,
      recoveryBoundMs: 10_000,
    },
    inject: async (c, context) => {
      await holdBacklog(c, context);
      await c.redis.kill();
      rmSync(join(c.redis.dir, 'appendonlydir'), { recursive: true, force: true });
      rmSync(join(c.redis.dir, 'dump.rdb'), { force: true });
    },
    heal: async (c, context) => {
      await c.redis.restart();
      await releaseOnceRebuilding(c, context);
    },
    mayFail: ['lostAcknowledged'],
  },
];

export function row(name: string): FaultRow {
  const found = ROWS.find((r) => r.name === name);
  if (!found) throw new Error(`no fault row ${name}`);
  return found;
}

export interface RunOptions {
  secret: string;
  /** Stock of the row's sale. @default 250 */
  stock?: number;
  /** The sale's per-user limit. @default 1 */
  perUserLimit?: number;
  /** New buyers per second. @default 40 */
  ratePerSecond?: number;
  /** Buyers issued before the fault is injected. @default 60 */
  buyersBeforeFault?: number;
  /** The row's fault lasts this long instead of its own holdMs. */
  holdMs?: number;
  /** Recovery bound, ms. @default 5000 */
  recoveryBoundMs?: number;
  /** Buyers keep coming at least this long after the fault ended, ms (and until the sale answered). @default 1500 */
  issueAfterHealMs?: number;
  /** Rows that hold a pipeline backlog: entries to let back up in the stream first. @default 100 */
  backlogTarget?: number;
  /** Where the history (JSON Lines) is written; none: memory only. */
  historyDir?: string;
}

export interface RowRun {
  row: string;
  fault: string;
  saleId: string;
  /** The sale and load as the harness made them (the checker's stock and limit come from here). */
  load: SaleFacts & { ratePerSecond: number; buyersBeforeFault: number; processes: string[] };
  /** What the row is expected to show: 'holds', or 'violation found' for a row with checks that must fail. */
  expected: { verdict: 'holds' | 'violation found'; mustFail: CheckName[]; mayFail: CheckName[] };
  /** What it showed. */
  observed: { verdict: 'holds' | 'violation found'; failed: CheckName[] };
  /** Figures the fault's steps observed (e.g. `backlog`: what the pipelines held when it struck). */
  notes: Record<string, unknown>;
  report: RowReport;
  historyFile: string | undefined;
  /** Checks that failed although the row does not allow it, and required failures that did not happen. */
  unexpected: string[];
}

/**
 * The harness holds the pipelines' writes until entries back up in the stream (`backlogTarget`, at
 * most 15 s), then lets those batches through and holds the next ones: read from the backlog, they
 * come full, with the batch read ahead. Notes what the pipelines then hold (`backlog`). `onceHeld` is
 * called as soon as the first batches are held, before the backlog builds.
 */
async function holdBacklog(c: FaultCluster, context: RowContext, onceHeld?: () => void): Promise<void> {
  const redis = new Redis(c.redis.url);
  try {
    const block = await c.blockPipelines(context.saleId);
    context.block = block;
    onceHeld?.();
    const target = context.options.backlogTarget ?? 100;
    const deadline = performance.now() + 15_000;
    while ((await backlog(redis, context.saleId)).undelivered < target && performance.now() < deadline)
      await delay(20); // observing the stream back up, bounded
    await block.swap(c.pipelines);
    const held = await heldByPipelines(redis, context.saleId);
    context.notes.backlog = { ...held, pipelines: c.pipelines };
  } finally {
    redis.disconnect();
  }
}

/**
 * After Redis came back: lets the pipelines' writes go on once a rebuild of the sale has begun on it
 * and either kept its flag up for a second (reading the record, or waiting for the pipelines), or
 * finished and the sale sold again (a new entry in its stream; or a second passed). A rebuild that
 * does not wait for what the pipelines hold has read the record by then, and the batches are
 * recorded behind its back — after newer reservations, as in the outside run (otherwise a later
 * check may see the record ahead of Redis and rebuild again, hiding the fault). At most 20 s. Notes
 * when, how the rebuild stood, and whether it raised the recovery fence.
 */
async function releaseOnceRebuilding(c: FaultCluster, context: RowContext): Promise<void> {
  const fenceBefore = await c.recoveryFence();
  const keys = saleKeys(context.saleId);
  const redis = new Redis(c.redis.url);
  const began = performance.now();
  let flagSince: number | undefined;
  let finishedAt: number | undefined;
  let soldAgain = false;
  try {
    while (performance.now() - began < 20_000) {
      const [stock, flag] = await redis.mget(keys.stock, keys.recovering);
      const now = performance.now();
      flagSince = flag === null ? undefined : (flagSince ?? now);
      finishedAt = stock !== null && flag === null ? (finishedAt ?? now) : undefined;
      soldAgain = finishedAt !== undefined && (await redis.xlen(keys.stream)) > 0;
      if (flagSince !== undefined && now - flagSince >= 1000) break;
      if (finishedAt !== undefined && (soldAgain || now - finishedAt >= 1000)) break;
      await delay(10); // observing the rebuild, bounded
    }
    context.notes.rebuild = {
      writesHeldMs: Math.round(performance.now() - began),
      finishedBeforeWritesWentOn: finishedAt !== undefined,
      soldAgainBeforeWritesWentOn: soldAgain,
      fenceRaised: (await c.recoveryFence()) > fenceBefore,
    };
  } finally {
    redis.disconnect();
    await context.block?.release();
    context.block = undefined;
  }
}

/**
 * After Redis came back older than what the pipelines hold: lets their writes go on once the sale
 * sold again (its stream grew past what the restarted Redis had: a serve compared without waiting for
 * the pipelines), or once the recovery fence was raised and a second passed (a serve is waiting for
 * the pipelines, as it must). At most 20 s. Notes which, and when.
 */
async function releaseOnceSoldOrFenced(c: FaultCluster, context: RowContext): Promise<void> {
  const fenceBefore = await c.recoveryFence();
  const keys = saleKeys(context.saleId);
  const redis = new Redis(c.redis.url);
  const began = performance.now();
  let fencedSince: number | undefined;
  let soldAgain = false;
  try {
    const lastIdAtRestart = await lastStreamId(redis, keys.stream);
    while (performance.now() - began < 20_000) {
      soldAgain = (await lastStreamId(redis, keys.stream)) !== lastIdAtRestart;
      if (soldAgain) break;
      const now = performance.now();
      if ((await c.recoveryFence()) > fenceBefore) fencedSince ??= now;
      if (fencedSince !== undefined && now - fencedSince >= 1000) break;
      await delay(10); // observing the serves, bounded
    }
    context.notes.rollback = {
      writesHeldMs: Math.round(performance.now() - began),
      soldAgainBeforeWritesWentOn: soldAgain,
      fenceRaised: fencedSince !== undefined,
    };
  } finally {
    redis.disconnect();
    await context.block?.release();
    context.block = undefined;
  }
}

async function lastStreamId(redis: Redis, stream: string): Promise<string> {
  const info = (await redis.call('XINFO', 'STREAM', stream).catch(() => [])) as unknown[];
  const at = info.indexOf('last-generated-id');
  return at >= 0 ? String(info[at + 1]) : '';
}

/**
 * Runs one row on a running cluster: a fresh sale, buyers at a steady rate, the fault after the first
 * buyers, undone after its hold; buyers keep coming until the sale answered again after the fault
 * (and at least `issueAfterHealMs`; at most 10 s more), then the pipeline drains, and the checker
 * compares every answer (and every sample of Redis's offer) with the record and with the sale as the
 * harness created it.
 */
export async function runRow(
  cluster: FaultCluster,
  faultRow: FaultRow,
  options: RunOptions,
): Promise<RowRun> {
  const history = new History(
    options.historyDir ? join(options.historyDir, `${faultRow.name}.jsonl`) : undefined,
  );
  // The checker's stock and limit: what the harness asks for here, never read back from the service.
  const sale: SaleFacts = { stock: options.stock ?? 250, perUserLimit: options.perUserLimit ?? 1 };
  const ratePerSecond = options.ratePerSecond ?? 40;
  const buyersBeforeFault = options.buyersBeforeFault ?? 60;
  const admin = signToken(options.secret, 'fault-admin', { admin: true });
  const created = await fetch(`${cluster.url('serve-b')}/api/sales`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `fault row ${faultRow.name}`, ...sale }),
  });
  if (created.status !== 201) throw new Error(`could not create the sale: ${await created.text()}`);
  const saleId = String(((await created.json()) as { id: string }).id);

  const context: RowContext = { saleId, options, notes: {} };
  const sampler = new OfferSampler(cluster.redis.url, saleId, history);
  let load: Load | undefined;
  try {
    await faultRow.prepare?.(cluster, context);
    const tokens = new Map<string, string>();
    load = new Load({
      servers: cluster.servers,
      saleId,
      tokenFor: (user) => {
        let token = tokens.get(user);
        if (!token) tokens.set(user, (token = signToken(options.secret, user)));
        return token;
      },
      ratePerSecond,
      userPrefix: `${faultRow.name}-u`,
      history,
    });
    sampler.start();
    load.start();
    while (load.issued < buyersBeforeFault) await delay(20); // observing the load, bounded by the test timeout

    history.fault(faultRow.name, 'start', faultRow.target);
    await faultRow.inject(cluster, context);
    await delay(options.holdMs ?? faultRow.holdMs); // the fault's duration, not a synchronisation
    await faultRow.heal(cluster, context);
    history.fault(faultRow.name, 'end', faultRow.target);
    await faultRow.restore?.(cluster, context);

    // Keep buyers coming until the sale answered after the fault (and a while more), at most 10 s
    // past the row's own minimum.
    const healedAt = history.now();
    const atLeast = options.issueAfterHealMs ?? 1500;
    const recoveryThrough = faultRow.recoveryThrough ? cluster.url(faultRow.recoveryThrough) : undefined;
    const invokedAfter = new Set<string>();
    let seen = history.events.length;
    let answered = false;
    for (;;) {
      const since = history.now() - healedAt;
      const events = history.events;
      for (; seen < events.length; seen++) {
        const e = events[seen] as (typeof events)[number];
        if (e.t < healedAt || e.type === 'fault' || e.type === 'offer') continue;
        if (e.type === 'invoke') invokedAfter.add(`${e.key}#${e.attempt}`);
        else if (
          (e.type === 'ok' || (e.type === 'fail' && e.status === 409)) &&
          invokedAfter.has(`${e.key}#${e.attempt}`) &&
          (recoveryThrough === undefined || e.server === recoveryThrough)
        ) {
          answered = true;
        }
      }
      if ((answered && since > atLeast) || since > atLeast + 10_000) break;
      await delay(100);
    }
    load.stopIssuing();
    await load.finished();

    const redis = new Redis(cluster.redis.url);
    const drained = await waitForDrain(redis, saleId, 30_000).finally(() => redis.disconnect());
    await sampler.stop(); // after one last sample of the drained sale
    const final = await readFinalState(
      { redis: cluster.redis.url, database: cluster.postgres.url },
      saleId,
      drained,
      cluster.problems(),
    );
    const report = checkRow(history.events, sale, final, {
      ...(recoveryThrough ? { server: recoveryThrough } : {}),
      boundMs: options.recoveryBoundMs ?? 5000,
    });
    const mustFail = [...(faultRow.mustFail ?? [])];
    const failed = report.checks.filter((c) => !c.valid).map((c) => c.name);
    return {
      row: faultRow.name,
      fault: faultRow.fault,
      saleId,
      load: { ...sale, ratePerSecond, buyersBeforeFault, processes: cluster.processes },
      expected: {
        verdict: mustFail.length > 0 ? 'violation found' : 'holds',
        mustFail,
        mayFail: [...(faultRow.mayFail ?? [])],
      },
      observed: { verdict: failed.length > 0 ? 'violation found' : 'holds', failed },
      notes: context.notes,
      report,
      historyFile: history.file,
      unexpected: unexpectedOutcomes(faultRow, report),
    };
  } finally {
    load?.stopIssuing(); // a row that threw leaves no buyers coming
    await context.block?.release();
    await sampler.stop();
    history.flush();
  }
}

/**
 * Samples the sale's offer on Redis every `everyMs` (stock key and recovery flag in one MGET) into
 * the history, for the checker's overOffered check; failures (Redis down) are skipped. Its own
 * connection, which never queues a command while Redis is away.
 */
class OfferSampler {
  private readonly redis: Redis;
  private timer: NodeJS.Timeout | undefined;
  private sampling: Promise<void> | undefined;

  constructor(
    url: string,
    private readonly saleId: string,
    private readonly history: History,
    private readonly everyMs = 100,
  ) {
    this.redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    this.redis.on('error', () => undefined); // Redis is killed on purpose: samples are skipped
  }

  start(): void {
    this.timer ??= setInterval(() => {
      this.sampling ??= this.sample().finally(() => (this.sampling = undefined));
    }, this.everyMs);
  }

  /** Takes one last sample (if it was sampling), and stops. */
  async stop(): Promise<void> {
    const running = this.timer !== undefined;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sampling;
    if (running) await this.sample();
    this.redis.disconnect();
  }

  private async sample(): Promise<void> {
    const keys = saleKeys(this.saleId);
    const sentAt = this.history.now();
    try {
      const [stock, recovering] = await this.redis.mget(keys.stock, keys.recovering);
      this.history.add({
        type: 'offer',
        sentAt,
        offered: stock === null ? null : Number(stock),
        recovering: recovering !== null,
      });
    } catch {
      // Redis is down or restarting: no sample
    }
  }
}

/** Failed checks the row does not allow, and required failures the checker did not see. */
export function unexpectedOutcomes(faultRow: FaultRow, report: RowReport): string[] {
  const allowed = new Set([...(faultRow.mustFail ?? []), ...(faultRow.mayFail ?? [])]);
  const failed = report.checks.filter((c) => !c.valid);
  return [
    ...failed
      .filter((c) => !allowed.has(c.name))
      .map((c) => `${c.name} failed (${c.count}): ${c.examples.join('; ')}`),
    ...(faultRow.mustFail ?? [])
      .filter((name) => !failed.some((c) => c.name === name))
      .map((name) => `${name} was expected to fail under this fault, and the checker did not see it`),
  ];
}
