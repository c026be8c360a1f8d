import { BackendUnreachableError, monotonicNow, type Watch } from '../backend/index.js';
import type { SocketFailure } from './driver.js';

/**
 * The connect timeout: how long the client has been without a connection (since it was made, or
 * since it lost its connection) and why its last attempt failed. Past `connectTimeoutMs`, calls fail
 * with a BackendUnreachableError naming the servers, the socket's last error (ECONNREFUSED,
 * ENOTFOUND...) and for how long, and waiting attempts stop riding out the missing connection.
 */
export class Reachability {
  /** Monotonic ms since when no connection was up (made, or lost); undefined while connected. */
  private since: number | undefined = monotonicNow();
  /** Why the driver's last connection attempt failed, while not connected. */
  private failure: SocketFailure | undefined;

  constructor(
    readonly connectTimeoutMs: number,
    /** The servers, as the connection error names them. */
    private readonly address: () => string,
  ) {}

  connected(): void {
    this.since = undefined;
    this.failure = undefined;
  }

  /** The connection was lost now; `keep`: unless it was lost already (a session ending meanwhile). */
  lost({ keep = false } = {}): void {
    this.since = keep ? (this.since ?? monotonicNow()) : monotonicNow();
  }

  failed(failure: SocketFailure): void {
    this.failure = failure;
  }

  /** Milliseconds left until the client has been without a connection for connectTimeoutMs. */
  inMs(): number {
    if (this.since === undefined) return Infinity;
    return this.since + this.connectTimeoutMs - monotonicNow();
  }

  /** The connection error: `neverConnected` says 'no connection' rather than 'disconnected'. */
  error(neverConnected: boolean): BackendUnreachableError {
    const failure = this.failure;
    const since = this.since ?? monotonicNow();
    const forMs = Math.round(monotonicNow() - since);
    const timedOut = forMs >= this.connectTimeoutMs;
    const what = neverConnected ? 'no connection' : 'disconnected';
    const detail = `${what} for ${forMs} ms${
      timedOut ? ` (connectTimeoutMs: ${this.connectTimeoutMs})` : ''
    }${failure?.detail ? `; ${failure.detail}` : ''}`;
    return new BackendUnreachableError('zookeeper', this.address(), failure?.code, detail, {
      cause: failure?.error,
    });
  }

  /** `connected` (a wait for the next connection), cut short when the connect timeout is reached. */
  untilReachable(connected: Watch): Watch {
    const left = this.inMs();
    if (left === Infinity) return connected;
    let timer: NodeJS.Timeout | undefined;
    const due = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, left) + 1)));
    return {
      changed: Promise.race([connected.changed, due]).finally(() => clearTimeout(timer)),
      cancel: () => {
        clearTimeout(timer);
        connected.cancel();
      },
    };
  }
}
