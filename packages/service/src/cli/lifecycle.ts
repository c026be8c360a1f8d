/**
 * How every CLI command ends: what it opened (servers, connections, pools, HTTP listeners) is
 * registered in its Resources as it is opened, and closed in reverse order when the command
 * finishes, fails, or receives SIGINT/SIGTERM — then the process exits with the command's code.
 * A command that serves (serve, worker) returns 'serving' and ends on a signal.
 *
 * The explicit exit is deliberate: a CLI must not hang because some library kept a handle open, and
 * the server harness kills the servers it started when the process exits.
 */
import cluster from 'node:cluster';

/** Longest we wait for resources to close before exiting anyway. */
const CLOSE_TIMEOUT_MS = 15_000;
/**
 * Longest one resource may take to close before the next is closed anyway. A close stuck on a
 * dependency that is down (a rebuild still retrying a Redis Cluster that lost a master, a pipeline
 * waiting on a reply that never comes) must not keep the connections opened before it from closing.
 */
const CLOSE_ONE_TIMEOUT_MS = 5_000;

interface Entry {
  readonly what: string;
  readonly close: () => unknown;
}

export class Resources {
  private readonly entries: Entry[] = [];
  private closing: Promise<boolean> | undefined;

  constructor(
    private readonly report: (what: string, error: unknown) => void = reportCloseError,
    private readonly closeOneTimeoutMs = CLOSE_ONE_TIMEOUT_MS,
  ) {}

  /**
   * Registers something to close. If the command is already closing (a signal arrived while this
   * was being opened), it is closed right away.
   */
  add(what: string, close: () => unknown): void {
    const entry = { what, close };
    if (this.closing) void this.closeOne(entry);
    else this.entries.push(entry);
  }

  /** Closes everything, newest first, each once; resolves false if anything failed to close. */
  closeAll(): Promise<boolean> {
    this.closing ??= (async () => {
      let clean = true;
      for (const entry of this.entries.reverse()) clean = (await this.closeOne(entry)) && clean;
      this.entries.length = 0;
      return clean;
    })();
    return this.closing;
  }

  private async closeOne(entry: Entry): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const outOfTime = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`still closing after ${this.closeOneTimeoutMs} ms; going on without it`)),
        this.closeOneTimeoutMs,
      );
    });
    try {
      await Promise.race([Promise.resolve().then(entry.close), outOfTime]);
      return true;
    } catch (error) {
      this.report(entry.what, error);
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}

function reportCloseError(what: string, error: unknown): void {
  process.stderr.write(
    `could not close ${what}: ${error instanceof Error ? error.message : String(error)}\n`,
  );
}

export type CommandOutcome = void | 'serving';

const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;

/**
 * Wraps a commander action: runs it with a fresh Resources, prints an error as one line, closes
 * everything and exits — with the command's exit code, 1 on error, 130/143 on SIGINT/SIGTERM
 * (0 for a serving command stopped by a signal: that is how it is meant to end).
 */
export function action<A extends unknown[]>(
  run: (resources: Resources, ...args: A) => Promise<CommandOutcome>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const resources = new Resources();
    let serving = false;
    let finishing = false;
    const finish = (code: number) => {
      if (finishing) return;
      finishing = true;
      const timer = setTimeout(() => {
        process.stderr.write(`still closing after ${CLOSE_TIMEOUT_MS} ms; exiting anyway\n`);
        process.exit(code || 1);
      }, CLOSE_TIMEOUT_MS);
      timer.unref();
      void resources.closeAll().then((clean) => process.exit(code === 0 && !clean ? 1 : code));
    };
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => {
        // One line for the user: an HTTP process of serve --processes N (a cluster worker, in the
        // terminal's process group too) stops without a word; its primary says it.
        if (!cluster.isWorker) process.stderr.write(`\n${signal}: shutting down\n`);
        finish(serving ? 0 : SIGNAL_EXIT_CODES[signal]);
      });
    }
    try {
      serving = (await run(resources, ...args)) === 'serving';
      if (!serving) finish(typeof process.exitCode === 'number' ? process.exitCode : 0);
    } catch (error) {
      process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
      finish(1);
    }
  };
}
