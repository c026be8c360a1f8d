import type { Client } from 'node-zookeeper-client';
import { monotonicNow } from '../backend/index.js';
import { codeOf, UNANSWERED } from './errors.js';

/**
 * The read timeout the driver lacks. The driver pings every third of the timeout but never checks
 * the answers: a connection that went silent (a partition, a hung server: nothing closes the socket)
 * stays "connected". Every third of the timeout one cheap read asks, and a silence longer than 2/3
 * of the timeout since the last answer calls `silent` (the session drops the socket: the driver then
 * reconnects, to another member if it can), as ZooKeeper's Java client does.
 */
export class ReadTimeout {
  /** Monotonic ms of the last answer from a server. */
  lastHeard = monotonicNow();
  private heartbeat: NodeJS.Timeout | undefined;
  /** Fires when the silence since the last answer would reach the read timeout. */
  private silence: NodeJS.Timeout | undefined;

  /** An answer came (an error that is an answer counts; a lost connection's does not). */
  heard(error?: unknown): void {
    if (!error || !UNANSWERED.has(codeOf(error) ?? -1)) this.lastHeard = monotonicNow();
  }

  /** Starts watching the connection of `client()` while `connected()`; `silent` once it went quiet. */
  start(client: () => Client, timeoutMs: number, connected: () => boolean, silent: () => void): void {
    this.stop();
    const readTimeoutMs = (timeoutMs * 2) / 3;
    this.heartbeat = setInterval(
      () => {
        if (!connected()) return;
        client().exists('/', (error) => this.heard(error));
      },
      Math.max(10, Math.floor(timeoutMs / 3)),
    );
    this.heartbeat.unref();
    // The silence is timed from the last answer itself, not looked at on the pings' ticks: a tick's
    // answer arrives a moment after the tick, so the tick 2/3 of a timeout later found a silence just
    // short of the read timeout, and only the next one — a whole session timeout after the last
    // answer, when the server may already have expired the session — dropped the connection.
    const watchSilence = () => {
      if (!connected()) return;
      const left = this.lastHeard + readTimeoutMs - monotonicNow();
      if (left < 0) return silent();
      this.silence = setTimeout(watchSilence, left + 1);
      this.silence.unref();
    };
    watchSilence();
  }

  stop(): void {
    clearInterval(this.heartbeat);
    clearTimeout(this.silence);
  }
}
