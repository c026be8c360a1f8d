/**
 * Where lockstock reaches into node-zookeeper-client's connection manager, for what the driver does
 * not offer: why a connection attempt failed, a session handshake that never comes, the servers it
 * was given, closing a socket under it, and closing a client without tripping over its own close.
 * Every reach tolerates the internals missing (another driver version): the feature then lapses.
 */
import type { Client } from 'node-zookeeper-client';

/** Why the driver's last connection attempt failed (ECONNREFUSED, ENOTFOUND, a silent handshake...). */
export interface SocketFailure {
  readonly error?: Error;
  readonly code?: string;
  readonly detail: string;
}

/**
 * The driver drops its sockets' errors (it only reconnects): its manager's handlers, bound per
 * socket from the instance, are wrapped here so the connection error can say why — ECONNREFUSED,
 * ENOTFOUND, a connect that timed out. `failed` hears of each (the session keeps those that matter).
 */
export function watchSocketErrors(zk: Client, failed: (failure: SocketFailure) => void): void {
  const manager = driverInternals(zk) as
    (DriverManager & { onSocketError?: unknown; onSocketConnectTimeout?: unknown }) | undefined;
  if (!manager) return;
  const onError = manager.onSocketError;
  const onTimeout = manager.onSocketConnectTimeout;
  if (typeof onError === 'function') {
    manager.onSocketError = (error: Error & { code?: unknown }) => {
      const code = typeof error?.code === 'string' ? error.code : undefined;
      const detail = code === undefined ? `the last attempt: ${error?.message}` : '';
      failed({ error, code, detail });
      return (onError as (error: Error) => unknown).call(manager, error);
    };
  }
  if (typeof onTimeout === 'function') {
    manager.onSocketConnectTimeout = () => {
      failed({ code: 'ETIMEDOUT', detail: '' });
      return (onTimeout as () => unknown).call(manager);
    };
  }
}

/**
 * The driver times a connection attempt only until TCP connects: a server that accepts the socket
 * but never answers the session handshake (one still starting up, seen on a loaded machine) holds
 * the driver in CONNECTING for ever — an election started while ZooKeeper was down was then never
 * elected. So while not connected, a socket still open, still without a session, a whole connect
 * timeout after it was first seen (the driver's: the session timeout shared among the servers, as
 * ZooKeeper's Java client does) is dropped; the driver then tries again (the next server).
 * `look` says whether the session still cares ('gone': the timer stops); the returned timer is the
 * caller's to clear.
 */
export function watchHandshake(
  zk: Client,
  sessionTimeoutMs: number,
  look: () => 'gone' | 'connected' | 'connecting',
  failed: (failure: SocketFailure) => void,
): NodeJS.Timeout {
  const manager = driverInternals(zk);
  const servers = Math.max(1, manager?.servers?.length ?? 1);
  const connectTimeoutMs = Math.max(100, Math.floor(sessionTimeoutMs / servers));
  let seen: DriverSocket | undefined;
  const timer = setInterval(() => {
    const now = look();
    if (now === 'gone') return clearInterval(timer);
    if (now === 'connected') return void (seen = undefined);
    const socket = manager?.socket;
    const unanswered = manager?.state === DRIVER_CONNECTING && socket?.readyState === 'open';
    if (unanswered && socket === seen) {
      failed({
        detail: 'the last attempt: a server accepted the connection but never answered the session handshake',
      });
      socket.destroy?.();
    }
    seen = unanswered ? socket : undefined;
  }, connectTimeoutMs);
  timer.unref();
  return timer;
}

/** The servers a client was given (host:port, comma-separated), if its internals say. */
export function driverAddress(zk: Client): string | undefined {
  const servers = driverInternals(zk)?.servers;
  const named = Array.isArray(servers)
    ? servers.map((server) => {
        const { host, port } = server as { host?: unknown; port?: unknown };
        return `${String(host)}:${String(port)}`;
      })
    : [];
  return named.length > 0 ? named.join(',') : undefined;
}

/** Closes the client's socket under it (the driver reconnects); false if its internals moved. */
export function destroySocket(zk: Client): boolean {
  try {
    driverInternals(zk)?.socket?.destroy?.();
    return true;
  } catch {
    return false;
  }
}

/** The driver's connection manager, as far as lockstock reaches into it (all of it may be missing). */
interface DriverManager {
  socket?: DriverSocket;
  state?: number;
  servers?: unknown[];
  onSocketData?: unknown;
  onSocketConnected?: unknown;
  connect?: unknown;
}
interface DriverSocket {
  readyState?: string;
  destroy?: () => void;
}

/** The driver's CONNECTING state: a socket is being opened, or its session handshake answered. */
const DRIVER_CONNECTING = 1;

export function driverInternals(zk: Client): DriverManager | undefined {
  return (zk as unknown as { connectionManager?: DriverManager }).connectionManager;
}

/** Closes a driver client; when it was connected, waits (bounded) until the server ended the session. */
export async function closeClient(zk: Client, connected: boolean): Promise<void> {
  if (!connected) {
    closeUnconnected(zk);
    return;
  }
  const closed = connected
    ? new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 2_000);
        zk.once('disconnected', () => {
          clearTimeout(timer);
          resolve();
        });
      })
    : Promise.resolve();
  try {
    zk.close();
  } catch {
    // An expired client is closed already.
  }
  await closed;
}

/**
 * Closes a driver client that is not connected. The driver's close() queues a close request and
 * parses whatever arrives next as the answer to a request: had it sent its connect request (or does
 * so later, from a reconnection already scheduled), the server's connect answer is read as a reply
 * with a nonsense error code, and the driver throws from its socket handler (an uncaught exception:
 * the process dies). So the driver is stopped instead: nothing that arrives is read any more, a
 * socket that connects is closed at once, no reconnection starts (a socket closing after the driver
 * reached CLOSED would start one, for ever), and the current socket goes.
 */
function closeUnconnected(zk: Client): void {
  const manager = driverInternals(zk);
  try {
    if (manager) {
      // Instance properties: each socket made from now on binds these, not the driver's own.
      manager.onSocketData = () => undefined;
      manager.onSocketConnected = () => manager.socket?.destroy?.();
      manager.connect = () => undefined;
    }
    zk.close();
    manager?.socket?.destroy?.();
  } catch {
    // An expired client is closed already.
  }
}
