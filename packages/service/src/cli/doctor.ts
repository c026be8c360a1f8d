import { writeFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import type { LockClient, ServerFinding, ServerReport } from 'lockstock';
import { action, type Resources } from './lifecycle.js';
import { intOption, JSON_OPTION_HELP, jsonTarget } from './options.js';

interface DoctorOptions {
  strict: boolean;
  timeout: number;
  json?: string | boolean;
}

/** One server's report as the doctor prints it (the URL without its password). */
export interface DoctorEntry {
  readonly url: string;
  readonly backend: string;
  readonly findings: readonly ServerFinding[];
  /** Why the server could not be asked, when it could not. */
  readonly error?: string;
}

/** Every lock client is an EventEmitter: the doctor silences its connection errors (the check reports). */
type DoctorClient = LockClient & { on(event: 'connectionError', listener: (error: Error) => void): unknown };

const SCHEMES = 'redis://, rediss://, postgres://, mysql://, mariadb://, etcd://, zookeeper://';

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description(
      'check the servers locks depend on: eviction policy, persistence, replication, poolers, session timeouts, versions',
    )
    .argument(
      '<url...>',
      `servers to check (${SCHEMES}; several for a Cluster's masters are asked through one)`,
    )
    .option('--strict', 'exit 2 on warnings too, not only on dangers', false)
    .option('--timeout <ms>', 'how long to wait for each server', intOption(100), 10_000)
    .option('--json [file]', JSON_OPTION_HELP.replace('the table', 'the text'))
    .addHelpText(
      'after',
      '\nEach finding is a danger (a lock may be granted twice or a fencing token go backwards), a warning\n' +
        '(a guarantee weaker than it looks) or info. Lock clients run the same checks at their first\n' +
        "acquire (option serverChecks: 'warn' by default, 'strict' refuses on a danger).\n" +
        '\nExit status: 0 when no server has a danger (nor, with --strict, a warning), 2 when one has,\n' +
        '1 when a server could not be asked or a URL is not understood.',
    )
    .action(
      action(async (resources, urls: string[], options: DoctorOptions) => {
        const entries: DoctorEntry[] = [];
        for (const url of urls) entries.push(await diagnose(resources, url, options.timeout));
        print(entries, jsonTarget(options.json));
        const failing = new Set<ServerFinding['severity']>(
          options.strict ? ['danger', 'warning'] : ['danger'],
        );
        if (entries.some((entry) => entry.error !== undefined)) process.exitCode = 1;
        else if (entries.some((entry) => entry.findings.some((f) => failing.has(f.severity))))
          process.exitCode = 2;
      }),
    );
}

/** The URL as shown: no password. */
function shown(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** A lock client of the backend the URL's scheme names (its driver loaded only then). */
async function clientFor(url: string): Promise<DoctorClient> {
  const scheme = /^([a-z0-9+]+):\/\//i.exec(url)?.[1]?.toLowerCase();
  const hostsOf = () => url.replace(/^[a-z0-9+]+:\/\//i, '').replace(/\/.*$/, '');
  // serverChecks 'off': the doctor asks once, itself.
  switch (scheme) {
    case 'redis':
    case 'rediss': {
      const { RedisLockClient } = await import('lockstock');
      // One attempt per command: an unreachable server fails the check instead of retrying forever.
      return new RedisLockClient({ redis: redisOptions(url), serverChecks: 'off' });
    }
    case 'postgres':
    case 'postgresql': {
      const { PostgresLockClient } = await import('lockstock/postgres');
      return new PostgresLockClient({ postgres: url, maxConnections: 2, serverChecks: 'off' });
    }
    case 'mysql':
    case 'mariadb': {
      const { MySqlLockClient } = await import('lockstock/mysql');
      return new MySqlLockClient({
        mysql: url.replace(/^mariadb:/i, 'mysql:'),
        maxConnections: 2,
        serverChecks: 'off',
      });
    }
    case 'etcd': {
      const { EtcdLockClient } = await import('lockstock/etcd');
      const hosts = hostsOf()
        .split(',')
        .map((host) => `http://${host}`);
      return new EtcdLockClient({ hosts, serverChecks: 'off' });
    }
    case 'zookeeper':
    case 'zk': {
      const { ZooKeeperLockClient } = await import('lockstock/zookeeper');
      return new ZooKeeperLockClient({ connectString: hostsOf(), serverChecks: 'off' });
    }
    default:
      throw new InvalidArgumentError(`"${shown(url)}" is not a server URL the doctor knows (${SCHEMES})`);
  }
}

/** ioredis options from a redis:// URL, failing fast when the server does not answer. */
function redisOptions(url: string): Record<string, unknown> {
  const parsed = new URL(url);
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 6379),
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    db: Number(parsed.pathname.slice(1) || 0),
    tls: parsed.protocol === 'rediss:' ? {} : undefined,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: true,
  };
}

async function diagnose(resources: Resources, url: string, timeoutMs: number): Promise<DoctorEntry> {
  let client: DoctorClient;
  try {
    client = await clientFor(url);
  } catch (error) {
    return { url: shown(url), backend: 'unknown', findings: [], error: messageOf(error) };
  }
  client.on('connectionError', () => undefined); // the check's own failure says it
  resources.add(`the ${shown(url)} client`, () => client.close());
  let timer: NodeJS.Timeout | undefined;
  const outOfTime = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const report: ServerReport = await Promise.race([client.checkServer(), outOfTime]);
    return { url: shown(url), backend: report.backend, findings: report.findings };
  } catch (error) {
    return { url: shown(url), backend: 'unknown', findings: [], error: messageOf(error) };
  } finally {
    clearTimeout(timer);
  }
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

const ORDER: Record<ServerFinding['severity'], number> = { danger: 0, warning: 1, info: 2 };

function print(entries: readonly DoctorEntry[], json: ReturnType<typeof jsonTarget>): void {
  if (json === 'stdout') {
    process.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
    return;
  }
  if (json) writeFileSync(json.file, `${JSON.stringify(entries, null, 2)}\n`);
  const lines: string[] = [];
  for (const entry of entries) {
    lines.push(`${entry.url} (${entry.backend})`);
    if (entry.error !== undefined) lines.push(`  error    could not be asked: ${entry.error}`);
    const findings = [...entry.findings].sort((a, b) => ORDER[a.severity] - ORDER[b.severity]);
    for (const finding of findings) {
      const where = finding.server ? ` [${finding.server}]` : '';
      lines.push(`  ${finding.severity.padEnd(8)} ${finding.check.padEnd(16)} ${finding.message}${where}`);
      if (finding.fix) lines.push(`  ${''.padEnd(8)} ${''.padEnd(16)} fix: ${finding.fix}`);
    }
    if (entry.error === undefined && !entry.findings.some((f) => f.severity !== 'info')) {
      lines.push('  ok       nothing weakens the locks here');
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
