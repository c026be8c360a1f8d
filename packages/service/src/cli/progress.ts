import cliProgress from 'cli-progress';
import type { PlannedStep, StepProgress } from '../support/progress.js';

/**
 * Progress of a long command on stderr (stdout keeps the report): on a terminal one bar over the
 * whole plan — percent, step i/n, elapsed, ETA, the running step — with each step's result line kept
 * above it; elsewhere (CI logs, a pipe) one line per finished step — its result, or else its label —
 * with the ETA.
 *
 * The ETA is the pace so far applied to what is left of the plan (in plan weight), so a step that is
 * slower than planned stretches it for everything after it; it is not the last step's rate, which
 * jumps about between fast and slow lab strategies.
 */
export function createProgress(options: {
  /** What a step is called in the count, plural: 'runs', 'steps'. */
  unit: string;
  stream?: NodeJS.WriteStream;
  now?: () => number;
}): StepProgress {
  const stream = options.stream ?? process.stderr;
  const plan = new PlanTracker(options.now ?? (() => performance.now()));
  return stream.isTTY ? new BarProgress(plan, stream, options.unit) : new LineProgress(plan, stream);
}

/** Where a job is in its plan, in plan weight. */
export class PlanTracker {
  private steps: readonly PlannedStep[] = [];
  private index = -1;
  private finishedWeight = 0;
  private fraction = 0;
  private startedAt = 0;

  constructor(private readonly now: () => number) {}

  begin(steps: readonly PlannedStep[]): void {
    this.steps = steps;
    this.index = -1;
    this.finishedWeight = 0;
    this.fraction = 0;
    this.startedAt = this.now();
  }

  start(): void {
    this.index = Math.min(this.index + 1, this.steps.length - 1);
    this.fraction = 0;
  }

  advance(fraction: number): void {
    this.fraction = Math.min(1, Math.max(0, fraction));
  }

  finish(): void {
    this.finishedWeight += this.current?.weight ?? 0;
    this.fraction = 0;
  }

  get current(): PlannedStep | undefined {
    return this.steps[this.index];
  }

  /** 1-based number of the current step, and how many there are. */
  get position(): { step: number; steps: number } {
    return { step: this.index + 1, steps: this.steps.length };
  }

  get total(): number {
    return this.steps.reduce((sum, step) => sum + step.weight, 0);
  }

  get done(): number {
    return this.finishedWeight + this.fraction * (this.current?.weight ?? 0);
  }

  get elapsedMs(): number {
    return this.now() - this.startedAt;
  }

  /** Elapsed × (what is left / what is done); undefined before anything is done. */
  get remainingMs(): number | undefined {
    const done = this.done;
    if (done <= 0) return undefined;
    return (this.elapsedMs * Math.max(0, this.total - done)) / done;
  }
}

/** 0:42, 12:05, 1h07m; '?' when unknown. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '?';
  const seconds = Math.round(ms / 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  return hours > 0 ? `${hours}h${pad(minutes)}m` : `${minutes}:${pad(seconds % 60)}`;
}

class LineProgress implements StepProgress {
  constructor(
    private readonly plan: PlanTracker,
    private readonly stream: NodeJS.WriteStream,
  ) {}

  begin(steps: readonly PlannedStep[]): void {
    this.plan.begin(steps);
  }

  start(): void {
    this.plan.start();
  }

  advance(fraction: number): void {
    this.plan.advance(fraction);
  }

  finish(result?: string): void {
    const label = this.plan.current?.label ?? '';
    this.plan.finish();
    const { step, steps } = this.plan.position;
    const eta = step < steps ? ` (ETA ${formatDuration(this.plan.remainingMs)})` : '';
    this.stream.write(`[${step}/${steps}] ${result ?? label}${eta}\n`);
  }

  end(): void {}
}

class BarProgress implements StepProgress {
  private readonly bars: cliProgress.MultiBar;
  private bar: cliProgress.SingleBar | undefined;
  private ticker: NodeJS.Timeout | undefined;

  constructor(
    private readonly plan: PlanTracker,
    stream: NodeJS.WriteStream,
    private readonly unit: string,
  ) {
    this.bars = new cliProgress.MultiBar(
      {
        stream,
        format: ' {bar} {percentage}% | {step}/{steps} {unit} | {elapsed} elapsed, ETA {remaining} | {label}',
        hideCursor: true,
        clearOnComplete: true,
        barsize: 24,
      },
      cliProgress.Presets.shades_classic,
    );
  }

  private payload() {
    const { step, steps } = this.plan.position;
    return {
      step,
      steps,
      unit: this.unit,
      label: this.plan.current?.label ?? '',
      elapsed: formatDuration(this.plan.elapsedMs),
      remaining: formatDuration(this.plan.remainingMs),
    };
  }

  private redraw(): void {
    this.bar?.update(this.plan.done, this.payload());
  }

  begin(steps: readonly PlannedStep[]): void {
    this.plan.begin(steps);
    this.bar = this.bars.create(this.plan.total, 0, this.payload());
    // Elapsed and ETA move on between updates (a benchmark step is silent for seconds).
    this.ticker = setInterval(() => this.redraw(), 1_000);
    this.ticker.unref();
  }

  start(): void {
    this.plan.start();
    this.redraw();
  }

  advance(fraction: number): void {
    this.plan.advance(fraction);
    this.redraw();
  }

  finish(result?: string): void {
    this.plan.finish();
    if (result) this.bars.log(`${result}\n`);
    this.redraw();
  }

  end(): void {
    if (!this.bar) return;
    clearInterval(this.ticker);
    this.bar = undefined;
    this.bars.update(); // writes results logged since the last frame: stop() would drop them
    this.bars.stop();
  }
}
