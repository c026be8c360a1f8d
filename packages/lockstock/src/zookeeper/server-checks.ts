import { connect } from 'node:net';
import type { ServerFinding } from '../locks/server-checks.js';
import type { ZooKeeperSession } from './session.js';

/**
 * The ZooKeeper ensemble behind a lock client: the session timeout it granted against the one asked
 * for (the server bounds it to its min/maxSessionTimeout, 2–20 ticks by default: every hold lasts as
 * long as the session, so the granted timeout is how long a crashed holder keeps its locks, and how
 * long a pause a live holder survives), and, where the `srvr` four-letter word answers (whitelisted
 * by default since 3.5), the server's version and mode.
 */
export async function checkZooKeeperServer(
  session: ZooKeeperSession,
  requestedMs: number,
  connectString: string | undefined,
): Promise<ServerFinding[]> {
  await session.exists('/'); // connected: the timeout in force is the server's answer
  const grantedMs = session.timeoutMs();
  const findings: ServerFinding[] = [];
  const first = connectString?.split('/')[0]?.split(',')[0];
  const srvr = first ? await fourLetterWord(first, 'srvr').catch(() => undefined) : undefined;
  const version = srvr?.match(/version: ([^\s,-]+)/i)?.[1];
  if (version !== undefined) {
    const mode = srvr?.match(/Mode: (\w+)/)?.[1] ?? 'unknown mode';
    findings.push({ check: 'server-version', severity: 'info', message: `ZooKeeper ${version} (${mode}).` });
  }
  if (grantedMs > requestedMs) {
    findings.push({
      check: 'session-timeout',
      severity: 'warning',
      message: `the server raised the session timeout from ${requestedMs} to ${grantedMs} ms (its minSessionTimeout): a crashed holder keeps its locks that long.`,
      fix: `Ask for at least ${grantedMs} ms (sessionTimeoutMs), or lower the server's minSessionTimeout (tickTime × 2 by default).`,
    });
  } else if (grantedMs < requestedMs) {
    findings.push({
      check: 'session-timeout',
      severity: 'warning',
      message: `the server lowered the session timeout from ${requestedMs} to ${grantedMs} ms (its maxSessionTimeout): a pause or a partition longer than that loses every hold.`,
      fix: `Ask for at most ${grantedMs} ms (sessionTimeoutMs), or raise the server's maxSessionTimeout (tickTime × 20 by default).`,
    });
  }
  return findings;
}

/** One four-letter word's answer from host:port within a second (rejects where it is not whitelisted). */
function fourLetterWord(address: string, word: string): Promise<string> {
  const colon = address.lastIndexOf(':');
  const host = colon > 0 ? address.slice(0, colon) : address;
  const port = colon > 0 ? Number(address.slice(colon + 1)) : 2181;
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const chunks: Buffer[] = [];
    socket.setTimeout(1_000, () => socket.destroy(new Error(`no answer to ${word} from ${address}`)));
    socket.on('connect', () => socket.end(word));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.length > 0 && !/is not executed because it is not in the whitelist/.test(text)) resolve(text);
      else reject(new Error(`${word} is not answered by ${address}`));
    });
  });
}
