import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { installDebianPackages, whichExecutable } from '@lockstock/servers';

const run = promisify(execFile);
const scriptPath = fileURLToPath(new URL('./wrk-post.lua', import.meta.url));

/** wrk (Debian's package), installed like the servers are when running as root and missing. */
export function findWrk(): string {
  const found = whichExecutable('wrk');
  if (found) return found;
  installDebianPackages('wrk', ['wrk']);
  return whichExecutable('wrk') ?? 'wrk';
}

export interface WrkResult {
  requests: number;
  durationUs: number;
  /** HTTP status → responses */
  statuses: Record<string, number>;
  latencyUs: { p50: number; p99: number; mean: number };
  errors: { connect: number; read: number; write: number; timeout: number };
}

export interface WrkLoad {
  url: string;
  /** One bearer token a line; request i of thread t uses token first + t + i·threads. */
  tokensFile: string;
  firstToken: number;
  tokenCount: number;
  connections: number;
  threads: number;
  durationSeconds: number;
}

/**
 * Runs wrk in its own process (a C load generator: it saturates long after the server does, unlike a
 * Node loop sharing the machine's cores with it) with wrk-post.lua, and returns what it measured.
 */
export async function runWrk(load: WrkLoad): Promise<WrkResult> {
  const { stdout } = await run(
    findWrk(),
    [
      '-t',
      String(load.threads),
      '-c',
      String(load.connections),
      '-d',
      `${load.durationSeconds}s`,
      '--timeout',
      '10s',
      '-s',
      scriptPath,
      load.url,
      '--',
      load.tokensFile,
      String(load.firstToken),
      String(load.tokenCount),
      String(load.threads),
    ],
    { maxBuffer: 1 << 20 },
  );
  const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'));
  if (!line) throw new Error(`wrk printed no result:\n${stdout}`);
  return JSON.parse(line) as WrkResult;
}

/** Responses per second with `status`. */
export const ratePerSec = (result: WrkResult, status: number) =>
  ((result.statuses[String(status)] ?? 0) * 1e6) / result.durationUs;
