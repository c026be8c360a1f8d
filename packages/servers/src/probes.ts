import { request } from 'node:http';
import { connect } from 'node:net';

/**
 * Sends a ZooKeeper four-letter word (`ruok`, `srvr`, `stat`, `mntr`, `conf`, …) over a fresh TCP
 * connection and resolves with the whole answer (the server closes the connection after it).
 * Rejects on a connection error or when no complete answer came in `timeoutMs` (a paused server).
 */
export function fourLetterWord(
  port: number,
  word: string,
  { host = '127.0.0.1', timeoutMs = 2_000 }: { host?: string; timeoutMs?: number } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer to ${word} from ${host}:${port} in ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => socket.end(word));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.once('close', (hadError) => {
      clearTimeout(timer);
      if (!hadError) resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

/** The `Mode:` line of a ZooKeeper server's `srvr` answer: leader, follower, standalone, …. */
export function modeOf(srvr: string): string | undefined {
  return /^Mode: (\S+)/m.exec(srvr)?.[1];
}

export interface HttpAnswer {
  status: number;
  body: string;
}

/**
 * One HTTP request on a connection of its own (no keep-alive pool left behind), with a deadline:
 * rejects when no complete answer came in `timeoutMs` (a paused server) or the connection failed.
 * `body` is sent as JSON when it is not a string.
 */
export function httpRequest(
  url: string,
  { method = 'GET', body, timeoutMs = 2_000 }: { method?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const req = request(url, {
      method,
      agent: false,
      headers: payload === undefined ? {} : { 'content-type': 'application/json' },
    });
    const timer = setTimeout(
      () => req.destroy(new Error(`no answer from ${url} in ${timeoutMs} ms`)),
      timeoutMs,
    );
    req.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      res.once('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.end(payload);
  });
}
