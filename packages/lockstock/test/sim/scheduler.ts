import { AsyncLocalStorage } from 'node:async_hooks';
import { useCoreClock, type CoreClock } from '../../src/support/timer.js';
import { Rng } from './random.js';

/**
 * A simulated process: one lock client's world. Its clock runs at `rate` (skew: 1.004 runs fast),
 * and while `pausedUntil` lies ahead it runs nothing — no timer fires, no reply reaches it — as a
 * process stopped by a GC pause or SIGSTOP, while virtual time moves on for everyone else.
 */
export class Actor {
  pausedUntil = 0;

  constructor(
    readonly id: string,
    readonly rate: number,
  ) {}

  /** This process's monotonic clock at true time `t` (ms). */
  localAt(t: number): number {
    return t * this.rate;
  }

  /** The true time at which this process's clock reads `local`. */
  trueAt(local: number): number {
    return local / this.rate;
  }
}

interface Task {
  at: number;
  readonly seq: number;
  readonly actor: Actor | undefined;
  readonly run: () => void;
  cancelled: boolean;
}

/** What the core gets back from setTimeout: a handle with Node's Timeout methods, doing nothing. */
class SimTimer {
  constructor(readonly task: Task) {}
  unref(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  hasRef(): boolean {
    return false;
  }
  refresh(): this {
    return this;
  }
}

/**
 * The seeded scheduler: one event queue in virtual time (ms), run one task at a time; after each
 * task every promise continuation it caused runs (a real setImmediate between tasks drains the
 * microtask queue) before the next task. Nothing else runs, so a seed decides everything.
 *
 * The lock core reads time and arms timers through its clock seam (src/support/timer.ts), which the
 * scheduler installs: each call is charged to the actor whose code is running, told apart by an
 * AsyncLocalStorage that every task of an actor runs in (its promise continuations keep it).
 */
export class Scheduler {
  /** True time, ms: what the store's leases run on. */
  now = 0;
  readonly rng: Rng;
  private readonly queue: Task[] = [];
  private seq = 0;
  private readonly context = new AsyncLocalStorage<Actor>();
  /** Tasks run; a schedule that runs away is stopped at `maxTasks`. */
  steps = 0;
  /** Called before each task: the recorder notices holds whose lease ran out meanwhile. */
  beforeTask: (() => void) | undefined;

  constructor(seed: number) {
    this.rng = new Rng(seed);
  }

  /** The actor whose code is running (undefined: the store's, or the scheduler's). */
  get current(): Actor | undefined {
    return this.context.getStore();
  }

  /** Runs `fn` as `actor` (its timers and clock reads are the actor's). */
  as<T>(actor: Actor | undefined, fn: () => T): T {
    return actor ? this.context.run(actor, fn) : this.context.exit(fn);
  }

  /** Queues `run` at true time `at`, as `actor`. */
  at(at: number, actor: Actor | undefined, run: () => void): Task {
    const task: Task = { at: Math.max(at, this.now), seq: this.seq++, actor, run, cancelled: false };
    push(this.queue, task);
    return task;
  }

  after(ms: number, actor: Actor | undefined, run: () => void): Task {
    return this.at(this.now + ms, actor, run);
  }

  /** The core's clock: virtual, per actor. */
  readonly clock: CoreClock = {
    now: () => {
      const actor = this.current;
      return actor ? actor.localAt(this.now) : this.now;
    },
    setTimeout: (callback, delayMs) => {
      const actor = this.current;
      const at = actor ? actor.trueAt(actor.localAt(this.now) + delayMs) : this.now + delayMs;
      return new SimTimer(this.at(at, actor, callback)) as unknown as NodeJS.Timeout;
    },
    clearTimeout: (timer) => {
      if (timer instanceof SimTimer) timer.task.cancelled = true;
    },
    random: () => this.rng.next(),
  };

  /** Installs the clock for the core; returns the function that puts the real one back. */
  install(): () => void {
    const previous = useCoreClock(this.clock);
    return () => void useCoreClock(previous);
  }

  /**
   * Runs tasks until `done()` holds (checked after each task's continuations), the queue is empty,
   * or true time passes `until`. Returns why it stopped.
   */
  async run(
    done: () => boolean,
    until: number,
    maxTasks = 200_000,
  ): Promise<'done' | 'idle' | 'time' | 'steps'> {
    for (;;) {
      await drain();
      if (done()) return 'done';
      const task = pop(this.queue);
      if (!task) return 'idle';
      if (task.cancelled) continue;
      if (task.at > until) {
        push(this.queue, task);
        this.now = until;
        return 'time';
      }
      this.now = Math.max(this.now, task.at);
      if (task.actor && task.actor.pausedUntil > this.now) {
        // Frozen: it runs when the pause ends, in its original order among the frozen tasks.
        task.at = task.actor.pausedUntil;
        push(this.queue, task);
        continue;
      }
      if (++this.steps > maxTasks) return 'steps';
      this.beforeTask?.();
      this.as(task.actor, task.run);
    }
  }
}

/** Lets every pending promise continuation run (they all run before the check phase). */
const drain = () => new Promise<void>((resolve) => setImmediate(resolve));

const before = (a: Task, b: Task) => (a.at !== b.at ? a.at < b.at : a.seq < b.seq);

function push(heap: Task[], task: Task): void {
  heap.push(task);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(heap[i]!, heap[parent]!)) break;
    [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
    i = parent;
  }
}

function pop(heap: Task[]): Task | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (heap.length > 0 && last) {
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
      if (m === i) break;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  }
  return top;
}
