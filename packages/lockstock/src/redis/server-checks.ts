import type { ServerFinding } from '../locks/server-checks.js';
import { isCluster, redisAddress, type RedisClient } from './connection.js';
import type { ReplicaAcks } from './replicated.js';

/** The oldest server the scripts and the shared subscriber run on (SSUBSCRIBE, SET ... GET, LPOS). */
const MIN_VERSION = [7, 0] as const;

/** `INFO`'s `field:value` lines, all sections in one map. */
export function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return fields;
}

/** The masters to ask: every master of a Cluster client (ioredis), else the one server. */
function mastersOf(client: RedisClient): RedisClient[] {
  if (!isCluster(client)) return [client];
  const nodes = (client as unknown as { nodes?(role: 'master'): RedisClient[] }).nodes?.('master');
  return nodes && nodes.length > 0 ? nodes : [client];
}

/**
 * The Redis (or Valkey) servers a lock client writes to, each asked with one `INFO` (read-only; also
 * where `CONFIG` is disabled, as on managed services): the server's kind and version, the eviction
 * policy (a lock key or a fencing counter evicted is a double grant or a token going backwards),
 * persistence (a restart forgets locks and restarts counters), and replication (a failover may promote
 * a replica that never saw a lock; `replicaAcks` narrows it).
 */
export async function checkRedisServers(
  client: RedisClient,
  replicaAcks: ReplicaAcks | undefined,
): Promise<ServerFinding[]> {
  const masters = mastersOf(client);
  const several = masters.length > 1;
  const findings = await Promise.all(
    masters.map(async (node) => {
      const info = parseInfo(String(await node.call('INFO')));
      const server = several ? redisAddress(node) : undefined;
      return checkRedisInfo(info, replicaAcks).map((finding) => (server ? { ...finding, server } : finding));
    }),
  );
  return findings.flat();
}

/** What one server's INFO says (exported for the doctor's unit test of each rule). */
export function checkRedisInfo(info: Map<string, string>, replicaAcks?: ReplicaAcks): ServerFinding[] {
  return [
    ...versionFindings(info),
    ...evictionFindings(info),
    ...persistenceFindings(info),
    ...replicationFindings(info, replicaAcks),
  ];
}

function versionFindings(info: Map<string, string>): ServerFinding[] {
  const valkey = info.get('valkey_version');
  const kind = valkey !== undefined || info.get('server_name') === 'valkey' ? 'Valkey' : 'Redis';
  const version = valkey ?? info.get('redis_version') ?? 'unknown';
  // Valkey reports the Redis version it is compatible with as redis_version (7.2.4).
  const compatible = (info.get('redis_version') ?? '0').split('.').map(Number);
  const mode = info.get('redis_mode') ?? 'standalone';
  const findings: ServerFinding[] = [
    { check: 'server-version', severity: 'info', message: `${kind} ${version} (${mode}).` },
  ];
  const [major = 0, minor = 0] = compatible;
  if (major < MIN_VERSION[0] || (major === MIN_VERSION[0] && minor < MIN_VERSION[1])) {
    findings.push({
      check: 'server-version',
      severity: 'danger',
      message: `${kind} ${version} is older than ${MIN_VERSION.join('.')}, which lockstock's scripts and wake-ups need.`,
      fix: 'Upgrade the server to Redis 7.0 or later (or Valkey 7.2 or later).',
    });
  }
  return findings;
}

function evictionFindings(info: Map<string, string>): ServerFinding[] {
  const policy = info.get('maxmemory_policy');
  if (policy === undefined || policy === 'noeviction') return [];
  const limited = Number(info.get('maxmemory') ?? 0) > 0;
  const evicts = policy.startsWith('allkeys') ? 'any key' : 'any key with a lease, every lock key among them';
  return [
    {
      check: 'eviction-policy',
      severity: limited ? 'danger' : 'warning',
      message: limited
        ? `maxmemory-policy is ${policy}: when memory runs out Redis evicts ${evicts}, so a held lock can vanish (a second holder is granted it) and a fencing counter can restart (tokens go backwards).`
        : `maxmemory-policy is ${policy}: nothing is evicted while maxmemory is 0, but once a limit is set a held lock can vanish and a fencing counter restart.`,
      fix: 'Set maxmemory-policy noeviction on the Redis that holds locks (a full Redis then refuses new locks instead of dropping held ones).',
    },
  ];
}

function persistenceFindings(info: Map<string, string>): ServerFinding[] {
  if (info.get('aof_enabled') === '1') {
    return [
      {
        check: 'persistence',
        severity: 'info',
        message:
          'appendonly is on: a restart keeps held locks and fencing counters up to the last fsync (appendfsync).',
      },
    ];
  }
  return [
    {
      check: 'persistence',
      severity: 'warning',
      message:
        'appendonly is off: a restart forgets held locks (another client may be granted one still held) and restarts fencing counters from the last snapshot or zero (tokens go backwards).',
      fix: 'Set appendonly yes (appendfsync everysec or always), or keep a restarted Redis out of service for longer than the longest lease.',
    },
  ];
}

function replicationFindings(
  info: Map<string, string>,
  replicaAcks: ReplicaAcks | undefined,
): ServerFinding[] {
  if (info.get('role') === 'slave') {
    return [
      {
        check: 'replication',
        severity: 'danger',
        message:
          'this server is a replica: a lock written here is not on its master, so it excludes nobody who locks there (or is refused as READONLY).',
        fix: 'Point the lock client at the master (or at Sentinel, which finds it).',
      },
    ];
  }
  const replicas = Number(info.get('connected_slaves') ?? 0);
  if (replicas === 0) return [];
  if (replicaAcks === undefined) {
    return [
      {
        check: 'replication',
        severity: 'warning',
        message: `${replicas} replica(s), replicated asynchronously: a failover may promote one that never saw a lock, and it is granted again.`,
        fix: 'Set replicaAcks (WAIT after each acquire) and fence the resource with the lock’s tokens.',
      },
    ];
  }
  if (replicas < replicaAcks.replicas) {
    return [
      {
        check: 'replication',
        severity: 'warning',
        message: `replicaAcks asks for ${replicaAcks.replicas} replica(s) but ${replicas} are connected: every acquire will fail with LockNotReplicatedError.`,
        fix: 'Lower replicaAcks.replicas or bring the replicas back.',
      },
    ];
  }
  return [];
}
