import { freezeProcess } from './freeze.js';
import { hasExited, terminate, type StartedProcess } from './process.js';

/**
 * One server process that can be paused, killed and started again on the same ports and data: the
 * lifecycle the ZooKeeper and etcd launchers share. `launch` spawns the process and resolves once it
 * is ready (it kills what it spawned if it is not).
 */
export class ManagedProcess {
  private paused = false;

  constructor(
    private readonly launch: () => Promise<StartedProcess>,
    private started: StartedProcess | undefined,
  ) {}

  static async start(launch: () => Promise<StartedProcess>): Promise<ManagedProcess> {
    return new ManagedProcess(launch, await launch());
  }

  get pid(): number | undefined {
    return this.running ? this.started?.child.pid : undefined;
  }

  get running(): boolean {
    return this.started !== undefined && !hasExited(this.started.child);
  }

  get isPaused(): boolean {
    return this.running && this.paused;
  }

  /** The last lines the process wrote to its log file. */
  logTail(): string {
    return this.started?.logTail() ?? '';
  }

  /** Sends a signal to the process (SIGSTOP as pause(): it returns once the process is stopped). */
  signal(signal: NodeJS.Signals): void {
    if (signal === 'SIGSTOP') this.pause();
    else if (this.running) this.started?.child.kill(signal);
  }

  /** SIGSTOP: the process freezes; its sockets stay open but nothing answers (from the moment this returns). */
  pause(): void {
    const pid = this.pid;
    if (pid === undefined) return;
    freezeProcess(pid);
    this.paused = true;
  }

  /** SIGCONT after pause(). */
  resume(): void {
    if (!this.running) return;
    this.started?.child.kill('SIGCONT');
    this.paused = false;
  }

  /** SIGKILL (a crash: nothing is flushed) and waits for the exit. */
  async kill(): Promise<void> {
    if (this.started) await terminate(this.started, 'SIGKILL');
    this.paused = false;
  }

  /** A graceful stop with `signal` (SIGKILL after `graceMs`), waiting for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs?: number): Promise<void> {
    if (this.started) await terminate(this.started, signal, graceMs);
    this.paused = false;
  }

  /** Starts the process again (killing it first if it still runs) and waits until it is ready. */
  async restart(): Promise<void> {
    if (this.running) await this.kill();
    this.started = await this.launch();
    this.paused = false;
  }
}
