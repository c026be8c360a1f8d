import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { signToken } from '../../http/auth.js';
import {
  createSale,
  processTreeCpuUs,
  SECRET,
  sample,
  startHello,
  startLockstock,
  startMinimal,
  type HttpSample,
  type LockstockMode,
  type Server,
} from './http-servers.js';
import { inRunOrder } from './order.js';
import { startOtlpSink, type OtlpReceipt } from './otlp-sink.js';
import { runWrk } from './wrk.js';

export { createSale, startLockstock, startMinimal, type HttpSample } from './http-servers.js';

/** The load: `connections` keep-alive connections from wrk's `threads`, for `durationSeconds`. */
export interface HttpLoad {
  connections: number;
  threads: number;
  durationSeconds: number;
}

/** The purchase scenarios of one round, by server (purchases/s, or requests/s for hello world). */
export interface HttpRun {
  hello: HttpSample;
  /** The minimal hand-written endpoint (minimal-server.ts) on the same Redis. */
  minimal: HttpSample;
  /** `serve --workers 0` on the benchmark's Redis and PostgreSQL: purchases and sold-out answers. */
  serve: { purchases: HttpSample; soldOut: HttpSample };
  /** The same with the shipped rate limits on (per user as shipped, per address too high to refuse). */
  serveLimited: HttpSample;
  /** Tracing on (OTLP to a sink that keeps nothing) at the build's default sampling. */
  serveTraced: HttpSample;
  /** Tracing on, every purchase sampled (OTEL_TRACES_SAMPLER=parentbased_always_on). */
  serveTracedFull: HttpSample;
  /** `serve` as `npm start` runs it: private redis-server, PGlite, the pipeline (off the HTTP loop). */
  embedded: { purchases: HttpSample; soldOut: HttpSample };
  /** The embedded default with `--durability memory` (appendfsync everysec): the cost of fsync. */
  embeddedMemory: HttpSample;
  /** `serve --workers 0 --processes N` (N HTTP processes on one port), when asked for. */
  serveProcesses?: HttpSample;
  /** Another build's `serve --workers 0` (`--before`): off, rate limits on, traced at its default. */
  before?: { serve: HttpSample; limited: HttpSample; traced: HttpSample };
}

/**
 * Distinct buyers: tokens signed up front, one a line. Each scenario of a server process takes its
 * own range, so no token is ever verified twice by one process (the token cache cannot help), and
 * every purchase is a new buyer's first.
 */
export class BuyerTokens {
  readonly file: string;
  private readonly dir: string;

  constructor(
    readonly perScenario: number,
    readonly warmup: number,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'lockstock-bench-tokens-'));
    this.file = join(this.dir, 'tokens');
    const run = Date.now().toString(36);
    const lines = Array.from({ length: warmup + 2 * perScenario }, (_, i) =>
      signToken(SECRET, `b${run}x${i}`),
    );
    writeFileSync(this.file, `${lines.join('\n')}\n`);
  }

  /** [first, count] of a range: 0 warm-up, 1 and 2 the measured scenarios. */
  range(which: 0 | 1 | 2): [number, number] {
    return which === 0 ? [0, this.warmup] : [this.warmup + (which - 1) * this.perScenario, this.perScenario];
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Buyers of one round: a file of tokens per round (signed when the round first asks), so no server
 * process ever verifies a token twice (its token cache cannot help) and every purchase is a new
 * buyer's first. Round 0 is the warm-up's.
 */
export class RoundTokens {
  private readonly dir = mkdtempSync(join(tmpdir(), 'lockstock-bench-tokens-'));
  private readonly files = new Map<number, string>();
  private readonly run = Date.now().toString(36);

  constructor(readonly perRound: number) {}

  file(round: number): string {
    let file = this.files.get(round);
    if (!file) {
      file = join(this.dir, `round-${round}`);
      const first = round * this.perRound;
      const lines = Array.from({ length: this.perRound }, (_, i) =>
        signToken(SECRET, `b${this.run}x${first + i}`),
      );
      writeFileSync(file, `${lines.join('\n')}\n`);
      this.files.set(round, file);
    }
    return file;
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

type Kind = 'purchases' | 'soldOut';
interface Subject {
  name: string;
  server: Server;
  /** Its sales: a fresh one with stock per round (a new sale: the buyers' limits start over). */
  sale(stock: number): Promise<string>;
  soldOutSale?: string;
  path?: string;
}

/**
 * The HTTP part of `bench sale` (issue 49's one method): every server started once and warmed up
 * (long-lived, as users run them: a fresh process measured after 1 s ran its first seconds' slower
 * code, and lockstock's longer route warms up later than the minimal endpoint's), then rounds in
 * which each server is measured in turn — in the listed order on even rounds, reversed on odd ones
 * (order.ts) — by wrk in its own process. Each row's ratio is the median of its rounds' ratios, a
 * server against its baseline measured moments apart in the same round.
 */
export class HttpSession {
  private constructor(
    private readonly subjects: Subject[],
    private readonly stops: Array<() => Promise<void>>,
    private readonly tokens: RoundTokens,
    private readonly load: HttpLoad,
    private readonly exported: () => OtlpReceipt,
    private readonly redis: Redis,
  ) {}

  static async start(
    redisUrl: string,
    databaseUrl: string,
    load: HttpLoad,
    options: { serveProcesses: number; before?: string; warmupSeconds: number },
  ): Promise<HttpSession> {
    const tokens = new RoundTokens(30_000 * Math.max(load.durationSeconds, options.warmupSeconds));
    const stops: Array<() => Promise<void>> = [() => Promise.resolve(tokens.dispose())];
    const subjects: Subject[] = [];
    const sink = await startOtlpSink();
    stops.push(() => sink.stop());
    const redis = new Redis(redisUrl);
    stops.push(async () => void redis.disconnect());
    const session = new HttpSession(subjects, stops, tokens, load, () => sink.receipt(), redis);
    try {
      const lockstock = async (
        name: string,
        mode: LockstockMode,
        extra: { cli?: string; env?: Record<string, string>; traced?: boolean } = {},
      ) => {
        const server = await startLockstock(
          mode,
          redisUrl,
          databaseUrl,
          options.serveProcesses,
          [],
          extra.traced ? sink.url : '',
          extra,
        );
        stops.unshift(() => server.stop()); // servers first, the sink after them (their last spans)
        subjects.push({
          name,
          server,
          sale: (stock) => createSale(server.url, stock),
          soldOutSale: await createSale(server.url, 0),
        });
      };
      const hello = await startHello();
      stops.unshift(() => hello.stop());
      subjects.push({ name: 'hello', server: hello, sale: () => Promise.resolve(''), path: '/hello' });
      const minimal = await startMinimal(redisUrl);
      stops.unshift(() => minimal.stop());
      subjects.push({ name: 'minimal', server: minimal, sale: () => Promise.resolve(minimal.open) });
      await lockstock('serve', 'serve');
      await lockstock('serveLimited', 'serve-limited');
      await lockstock('serveTraced', 'serve', { traced: true });
      await lockstock('serveTracedFull', 'serve', {
        traced: true,
        env: { OTEL_TRACES_SAMPLER: 'parentbased_always_on' },
      });
      await lockstock('embedded', 'embedded');
      await lockstock('embeddedMemory', 'embedded-memory');
      if (options.serveProcesses > 1) await lockstock('serveProcesses', 'serve-processes');
      if (options.before) {
        await lockstock('beforeServe', 'serve', { cli: options.before });
        await lockstock('beforeLimited', 'serve-limited', { cli: options.before });
        await lockstock('beforeTraced', 'serve', { cli: options.before, traced: true });
      }
      // The warm-up: each server buys for warmupSeconds on a sale of its own (round 0's buyers).
      for (const subject of subjects) {
        await session.measure(subject, 'purchases', 0, options.warmupSeconds);
      }
      return session;
    } catch (error) {
      await session.stop();
      throw error;
    }
  }

  private async measure(subject: Subject, kind: Kind, round: number, seconds = this.load.durationSeconds) {
    const sale = kind === 'soldOut' ? subject.soldOutSale : await subject.sale(10_000_000);
    const path = subject.path ?? `/api/sales/${sale}/orders`;
    const tokensFile = this.tokens.file(round);
    const cpuBefore = processTreeCpuUs(subject.server.pid);
    const redisBefore = await this.redisCpuUs();
    const result = await runWrk({
      ...this.load,
      durationSeconds: seconds,
      url: `${subject.server.url}${path}`,
      tokensFile,
      firstToken: 0,
      tokenCount: this.tokens.perRound,
    });
    const cpuAfter = processTreeCpuUs(subject.server.pid);
    const redisAfter = await this.redisCpuUs();
    const measured = sample(result, subject.path ? 200 : kind === 'soldOut' ? 409 : 202);
    const answered = Object.values(result.statuses).reduce((sum, n) => sum + n, 0);
    if (cpuBefore === undefined || cpuAfter === undefined || answered === 0) return measured;
    // wrk's own start-up (reading the tokens) falls inside the window: the server idles meanwhile.
    const ownRedis = subject.name.startsWith('embedded') || subject.name === 'hello';
    return {
      ...measured,
      cpuUs: {
        server: (cpuAfter - cpuBefore) / answered,
        redis: ownRedis ? 0 : (redisAfter - redisBefore) / answered,
      },
    };
  }

  /** The bench's Redis's CPU time so far (INFO cpu), µs. */
  private async redisCpuUs(): Promise<number> {
    const info = await this.redis.info('cpu');
    const seconds = (name: string) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)?.[1] ?? 0);
    return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6;
  }

  /** One round (`round` 0-based): every server in turn; sold-out answers of serve and the embedded default. */
  async round(round: number): Promise<HttpRun> {
    const steps = this.subjects.flatMap((subject) =>
      subject.name === 'serve' || subject.name === 'embedded'
        ? [
            { subject, kind: 'purchases' as Kind },
            { subject, kind: 'soldOut' as Kind },
          ]
        : [{ subject, kind: 'purchases' as Kind }],
    );
    const got = new Map<string, HttpSample>();
    for (const { subject, kind } of inRunOrder(steps, round)) {
      got.set(`${subject.name}.${kind}`, await this.measure(subject, kind, round + 1));
    }
    const of = (name: string, kind: Kind = 'purchases') => got.get(`${name}.${kind}`) as HttpSample;
    return {
      hello: of('hello'),
      minimal: of('minimal'),
      serve: { purchases: of('serve'), soldOut: of('serve', 'soldOut') },
      serveLimited: of('serveLimited'),
      serveTraced: of('serveTraced'),
      serveTracedFull: of('serveTracedFull'),
      embedded: { purchases: of('embedded'), soldOut: of('embedded', 'soldOut') },
      embeddedMemory: of('embeddedMemory'),
      ...(got.has('serveProcesses.purchases') ? { serveProcesses: of('serveProcesses') } : {}),
      ...(got.has('beforeServe.purchases')
        ? { before: { serve: of('beforeServe'), limited: of('beforeLimited'), traced: of('beforeTraced') } }
        : {}),
    };
  }

  /** Spans the traced servers exported so far (all of them once stopped: SIGTERM flushes). */
  spansExported(): number {
    return this.exported().spans;
  }

  /** Stops every server, then the sink; returns the spans exported in all. */
  async stop(): Promise<number> {
    for (const stop of this.stops.splice(0)) await stop().catch(() => undefined);
    return this.exported().spans;
  }
}
