import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { freePort, PostgresServer, RedisServer } from '@lockstock/servers';
import { spawnCli, type CliProcess } from '../../helpers/cli.js';

const sql = (name: string) => readFileSync(new URL(`./sql/${name}.sql`, import.meta.url), 'utf8');
const LOCK_SALE = sql('lock-sale');
const LOCK_WAITERS = sql('lock-waiters');
const SESSION_WAITS = sql('session-waits');
const RECOVERY_FENCE = sql('recovery-fence');

/** Output that means a process hit something nobody handled (what issue 13 saw before it died). */
const CRASH =
  /Unhandled 'error' event|Emitted 'error' event|uncaughtException|unhandledRejection|UnhandledPromiseRejection/;

interface Member {
  readonly name: string;
  readonly args: string[];
  process: CliProcess;
  /** Exits the harness caused (SIGKILL); any other exit is a crash. */
  expectedExits: number;
  exits: number;
  readonly url?: string;
}

export interface FaultClusterOptions {
  secret: string;
  /** `serve` processes. @default 2 */
  serves?: number;
  /** Order pipelines in each serve (`serve --workers <n>`, in its order thread). @default 0 */
  pipelinesPerServe?: number;
  /** `worker` processes (one pipeline each); the first is named `worker`, the next `worker-2`... @default 1 */
  workers?: number;
  /** The workers' `--batch-size`. @default 100 */
  batchSize?: number;
  /**
   * The workers take over entries another consumer left pending this long, ms (their pipeline lease
   * is max(this, 3 s)). @default 1000
   */
  claimIdleMs?: number;
}

/**
 * The service as deployed: real redis-server (AOF, fsync every second) and PostgreSQL, `serve`
 * processes (by default two `serve --workers 0`) and `worker` processes (by default one), each a real
 * OS process of the built CLI. The harness is their supervisor: it kills, pauses, restarts them, and
 * knows which exits it caused, so any other exit — or a crash trace in any output — is reported as a
 * crash.
 */
export class FaultCluster {
  private readonly members = new Map<string, Member>();
  private readonly crashes: string[] = [];

  private constructor(
    readonly redis: RedisServer,
    readonly postgres: PostgresServer,
    private readonly env: Record<string, string>,
    /** Order pipelines in the cluster (each serve's and each worker's). */
    readonly pipelines: number,
  ) {}

  static async start(options: FaultClusterOptions): Promise<FaultCluster> {
    const [redis, postgres] = await Promise.all([
      RedisServer.start({ args: ['--appendonly', 'yes', '--appendfsync', 'everysec'] }),
      // Commits are durable against a server crash (synchronous_commit on: COMMIT returns once the WAL
      // is written). The harness default (off) loses the last commits on an immediate stop — and the
      // pipeline acknowledges entries after COMMIT. fsync stays off: no row crashes the machine.
      PostgresServer.start({ settings: { synchronous_commit: 'on' } }),
    ]);
    const serves = options.serves ?? 2;
    const perServe = options.pipelinesPerServe ?? 0;
    const workers = options.workers ?? 1;
    const cluster = new FaultCluster(
      redis,
      postgres,
      {
        LOCKSTOCK_JWT_SECRET: options.secret,
        LOCKSTOCK_RATE_LIMIT_PER_IP: '0', // one load generator address
        LOCKSTOCK_RATE_LIMIT_PER_USER: '0', // retries of one buyer are the point here
      },
      serves * perServe + workers,
    );
    const urls = ['--redis', redis.url, '--database', postgres.url];
    try {
      for (let i = 0; i < serves; i++) {
        const port = await freePort();
        const name = `serve-${String.fromCharCode(97 + i)}`;
        // One at a time: they migrate the same database.
        const args = ['serve', '--port', String(port), '--workers', String(perServe), ...urls];
        await cluster.launch(name, args, port);
      }
      for (let i = 0; i < workers; i++) {
        await cluster.launch(i === 0 ? 'worker' : `worker-${i + 1}`, [
          'worker',
          ...urls,
          '--batch-size',
          String(options.batchSize ?? 100),
          '--claim-idle-ms',
          String(options.claimIdleMs ?? 1000),
        ]);
      }
    } catch (error) {
      await cluster.stop(); // never leave servers behind a failed start
      throw error;
    }
    return cluster;
  }

  /** Base URLs of the serve processes, in order. */
  get servers(): string[] {
    return [...this.members.values()].flatMap((m) => (m.url ? [m.url] : []));
  }

  /** The processes, as the rows name them. */
  get processes(): string[] {
    return [...this.members.keys()];
  }

  url(name: string): string {
    return this.member(name).url ?? '';
  }

  private member(name: string): Member {
    const member = this.members.get(name);
    if (!member) throw new Error(`no process ${name} in the cluster`);
    return member;
  }

  private async launch(name: string, args: string[], port?: number): Promise<void> {
    // The worker says at info level when it runs; serve logs every request at info, so warn.
    const child = spawnCli(args, { ...this.env, LOG_LEVEL: port ? 'warn' : 'info' });
    const existing = this.members.get(name);
    const member: Member = existing ?? {
      name,
      args,
      process: child,
      expectedExits: 0,
      exits: 0,
      ...(port ? { url: `http://127.0.0.1:${port}` } : {}),
    };
    member.process = child;
    this.members.set(name, member);
    void child.exited.then(() => {
      member.exits++;
      const crash = child.allLines().find((line) => CRASH.test(line));
      if (crash) this.crashes.push(`${name}: ${crash}`);
    });
    const outcome = member.url
      ? await healthy(`${member.url}/healthz`, child)
      : await Promise.race([
          child.waitForLine(/order pipeline running/).then(() => 'ready'),
          child.exited.then(() => 'exited'),
          delay(60_000, 'not ready after 60 s', { ref: false }),
        ]);
    if (outcome !== 'ready') throw new Error(`${name} did not start (${outcome}):\n${child.output()}`);
  }

  /** Sends a signal to a process (SIGKILL counts as an exit the harness caused). */
  signal(name: string, signal: NodeJS.Signals): void {
    const member = this.member(name);
    if (signal === 'SIGKILL') member.expectedExits++;
    member.process.kill(signal);
  }

  /** SIGKILLs a process and waits until it is gone. */
  async kill(name: string): Promise<void> {
    this.signal(name, 'SIGKILL');
    await this.member(name).process.exited;
  }

  /** Starts a process again with the same arguments (a serve on the same port) and waits until it serves. */
  async restart(name: string): Promise<void> {
    const member = this.member(name);
    await this.launch(name, member.args);
  }

  /**
   * What went wrong with the processes themselves: exits the harness did not cause, and crash traces
   * in any process's output (also of processes still running, e.g. an unhandled rejection warning).
   */
  problems(): string[] {
    const problems = [...this.crashes];
    for (const member of this.members.values()) {
      if (member.exits > member.expectedExits) {
        problems.push(`${member.name} exited on its own:\n${member.process.output()}`);
      }
      const running = member.process.allLines().find((line) => CRASH.test(line));
      if (running && !problems.some((p) => p.includes(running))) problems.push(`${member.name}: ${running}`);
    }
    return problems;
  }

  /**
   * `ALTER DATABASE postgres SET name = value` (null: RESET): a session default that outranks the
   * server's command line; it applies to sessions opened afterwards.
   */
  /** CONFIG SET on the running redis-server (a restart returns it to its start arguments). */
  async redisConfig(name: string, value: string): Promise<void> {
    const client = new Redis(this.redis.url);
    try {
      await client.config('SET', name, value);
    } finally {
      client.disconnect();
    }
  }

  async postgresSetting(name: string, value: string | null): Promise<void> {
    const client = new pg.Client({ connectionString: this.postgres.url });
    await client.connect();
    try {
      // The name and value come from our own row table, never from input.
      await client.query(
        value === null
          ? `ALTER DATABASE postgres RESET ${name}`
          : `ALTER DATABASE postgres SET ${name} = '${value}'`,
      );
    } finally {
      await client.end();
    }
  }

  /**
   * Takes the sale's row lock in a transaction of the harness and resolves once a pipeline
   * transaction is waiting for it (bounded polling on pg_stat_activity): from then on a worker holds
   * a checked-out connection inside an open transaction — the moment a server crash is hardest on a
   * client. Resolves with the release (the lock also goes when the server does).
   */
  async blockPipelineOn(saleId: string): Promise<() => Promise<void>> {
    const block = await this.blockPipelines(saleId, 1);
    return () => block.release();
  }

  /**
   * Holds the order pipelines' writes for a sale: the harness takes the sale's row lock, and every
   * pipeline's next batch waits for it inside its transaction, with the entries it read (and the
   * batch it read ahead) in its memory, unrecorded. Resolves once `waiters` pipeline transactions
   * wait on it (bounded polling on pg_stat_activity).
   */
  async blockPipelines(saleId: string, waiters = this.pipelines): Promise<PipelineBlock> {
    const block = new PipelineBlock(this.postgres.url, saleId);
    await block.hold(waiters);
    return block;
  }

  /**
   * `ALTER SYSTEM SET name = value` (null: RESET) and a configuration reload: for server-wide
   * settings a session cannot change (e.g. wal_writer_delay). Not for settings given on the server's
   * command line (PostgresServer's), which outrank it.
   */
  async postgresSystemSetting(name: string, value: string | null): Promise<void> {
    const client = new pg.Client({ connectionString: this.postgres.url });
    await client.connect();
    try {
      // The name and value come from our own row table, never from input.
      await client.query(
        value === null ? `ALTER SYSTEM RESET ${name}` : `ALTER SYSTEM SET ${name} = '${value}'`,
      );
      await client.query('SELECT pg_reload_conf()');
    } finally {
      await client.end();
    }
  }

  /** The recovery fence (migration 005): how many rebuilds have raised it so far. */
  async recoveryFence(): Promise<number> {
    const client = new pg.Client({ connectionString: this.postgres.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ fence: string }>(RECOVERY_FENCE);
      return Number(rows[0]?.fence ?? 0);
    } finally {
      await client.end();
    }
  }

  /** Stops a process with SIGTERM (a clean shutdown) and starts it again. */
  async restartGracefully(name: string): Promise<void> {
    const member = this.member(name);
    member.expectedExits++;
    member.process.kill('SIGTERM');
    await member.process.exited;
    await this.launch(name, member.args);
  }

  async stop(): Promise<void> {
    for (const member of this.members.values()) {
      member.process.kill('SIGCONT');
      member.expectedExits++;
      member.process.kill('SIGTERM');
    }
    await Promise.all([...this.members.values()].map((m) => m.process.exited));
    this.redis.signal('SIGCONT');
    await Promise.all([this.redis.stop(), this.postgres.stop()]);
  }
}

/**
 * The harness's hold on a sale's row (see FaultCluster.blockPipelines). `swap()` lets the waiting
 * batches through and holds the next ones: they are read from whatever backed up meanwhile, so they
 * come full (a batch, and the batch read ahead).
 */
export class PipelineBlock {
  private holder: pg.Client | undefined;
  /** Watches pg_stat_activity outside any transaction (inside one, it is a snapshot). */
  private monitor: pg.Client | undefined;

  constructor(
    private readonly url: string,
    private readonly saleId: string,
  ) {}

  /** Takes the lock (queued behind whoever waits for it now), then waits for `waiters` batches. */
  async hold(waiters: number): Promise<void> {
    const monitor = (this.monitor ??= await connect(this.url));
    const previous = this.holder;
    const holder = await connect(this.url);
    const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    await holder.query('BEGIN');
    const locked = holder.query(LOCK_SALE, [this.saleId]);
    if (previous) {
      // Queued behind the batches waiting now (the lock manager's queue is first come, first
      // served): they go through when the previous hold ends, then this one holds the next ones.
      await waitFor(
        () => monitor.query<{ waiting: boolean }>(SESSION_WAITS, [rows[0]?.pid]),
        (result) => result.rows[0]?.waiting === true,
        20_000,
        'the harness to queue for the sale',
      );
      await previous.end();
    }
    await locked;
    this.holder = holder;
    await waitFor(
      async () => (await monitor.query<{ waiting: number }>(LOCK_WAITERS)).rows[0]?.waiting ?? 0,
      (n) => n >= waiters,
      20_000,
      `${waiters} pipeline transaction(s) to wait on the sale`,
    );
  }

  /** Lets the waiting batches through and holds the next ones (as many waiters again). */
  async swap(waiters: number): Promise<void> {
    await this.hold(waiters);
  }

  async release(): Promise<void> {
    const { holder, monitor } = this;
    this.holder = undefined;
    this.monitor = undefined;
    await holder?.end();
    await monitor?.end();
  }
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined); // the server may be stopped under it: expected
  await client.connect();
  return client;
}

/** Bounded polling until `done(value)`; throws with `what` after `timeoutMs`. */
async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (performance.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await delay(20);
  }
}

/** Polls /healthz until it answers 200: 'ready', or 'exited' if the process died, or after 60 s. */
async function healthy(url: string, child: CliProcess): Promise<string> {
  let exited = false;
  void child.exited.then(() => (exited = true));
  const deadline = performance.now() + 60_000;
  while (!exited && performance.now() < deadline) {
    const ok = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return 'ready';
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return exited ? 'exited' : 'not ready after 60 s';
}
