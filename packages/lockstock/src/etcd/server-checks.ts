import type { Etcd3 } from 'etcd3';
import type { ServerFinding } from '../locks/server-checks.js';

/** The oldest etcd whose lease and transaction semantics the backend was tested on. */
const MIN_VERSION = [3, 4] as const;

/**
 * The etcd cluster behind a lock client, asked read-only (Maintenance.Status, Cluster.MemberList,
 * Maintenance.Alarm GET): its version, how many members it has (one member tolerates no failure),
 * and raised alarms (NOSPACE: the cluster refuses every write, acquires and lease renewals among
 * them, until the operator compacts, defragments and disarms it).
 */
export async function checkEtcdServer(etcd: Etcd3): Promise<ServerFinding[]> {
  const [status, members, alarms] = await Promise.all([
    etcd.maintenance.status(),
    etcd.cluster.memberList({ linearizable: false }),
    etcd.maintenance.alarm({ action: 'Get', memberID: 0, alarm: 'None' }),
  ]);
  const findings: ServerFinding[] = [
    {
      check: 'server-version',
      severity: 'info',
      message: `etcd ${status.version}, ${members.members.length} member(s).`,
    },
  ];
  const [major = 0, minor = 0] = status.version.split('.').map(Number);
  if (major < MIN_VERSION[0] || (major === MIN_VERSION[0] && minor < MIN_VERSION[1])) {
    findings.push({
      check: 'server-version',
      severity: 'warning',
      message: `etcd ${status.version} is older than ${MIN_VERSION.join('.')}, the oldest the lock backend is tested on.`,
      fix: 'Upgrade etcd to 3.4 or later.',
    });
  }
  if (members.members.length === 1) {
    findings.push({
      check: 'replication',
      severity: 'info',
      message:
        'a single member: locks are as available as that one server (a cluster of 3 tolerates one failure).',
    });
  }
  for (const raised of alarms.alarms ?? []) {
    findings.push({
      check: 'alarm',
      severity: 'warning',
      message: `alarm ${String(raised.alarm)} is raised on member ${raised.memberID}: the cluster refuses writes, so acquires and lease renewals fail until it is cleared.`,
      fix: 'Compact and defragment etcd, then disarm the alarm (etcdctl alarm disarm).',
    });
  }
  return findings;
}
