import { rmSync } from 'node:fs';
import type { ManagedProcess } from './managed.js';

/**
 * What every launcher of one server process (ZooKeeper, etcd, MariaDB) offers for fault tests, over
 * its ManagedProcess: signals, pause and resume, kill and restart on the same ports and data, and a
 * stop that removes the temp dir the server owns.
 */
export abstract class ManagedServer {
  protected constructor(
    protected readonly managed: ManagedProcess,
    /** Removed by stop(); undefined when the data outlives the server (a cluster member's). */
    private readonly ownedDir: string | undefined,
  ) {}

  get pid(): number | undefined {
    return this.managed.pid;
  }

  get running(): boolean {
    return this.managed.running;
  }

  get paused(): boolean {
    return this.managed.isPaused;
  }

  /** Sends a signal to the server process as it is. */
  signal(signal: NodeJS.Signals): void {
    this.managed.signal(signal);
  }

  /** SIGSTOP: the server freezes (connections stay open, nothing answers, sessions and leases run out). */
  pause(): void {
    this.managed.pause();
  }

  /** SIGCONT after pause(). */
  resume(): void {
    this.managed.resume();
  }

  /** SIGKILL and wait for the exit; the data stays for restart(). */
  async kill(): Promise<void> {
    await this.managed.kill();
  }

  /** Starts the server again on the same ports and data (killing it first if it runs), and waits until it is ready. */
  async restart(): Promise<void> {
    await this.managed.restart();
  }

  /** SIGTERM (SIGKILL after 10 s), wait for the exit, remove the temp dir the server owns. */
  async stop(): Promise<void> {
    await this.managed.stop('SIGTERM');
    if (this.ownedDir !== undefined) rmSync(this.ownedDir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
