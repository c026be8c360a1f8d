import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdServer, ZooKeeperServer } from '@lockstock/servers';
import type { ServerFinding } from '../../src/index.js';
import { EtcdLockClient } from '../../src/etcd/index.js';
import { ZooKeeperLockClient } from '../../src/zookeeper/index.js';

/*
 * The checks of the session stores, against a real etcd (its version, a single member, a raised
 * NOSPACE alarm) and a real ZooKeeper whose maxSessionTimeout is below what the client asks for
 * (the session timeout it grants is what every hold lasts).
 */
const checks = (findings: readonly ServerFinding[], severity: ServerFinding['severity']) =>
  findings.filter((finding) => finding.severity === severity).map((finding) => finding.check);

let etcdServer: EtcdServer;
let zooKeeper: ZooKeeperServer;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  [etcdServer, zooKeeper] = await Promise.all([
    EtcdServer.start(),
    ZooKeeperServer.start({ tickTimeMs: 500, config: { maxSessionTimeout: 4_000 } }),
  ]);
});
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
  await Promise.all([etcdServer?.stop(), zooKeeper?.stop()]);
});

describe('etcd server checks', () => {
  it('its version and a single member are reported; a raised NOSPACE alarm is a warning', async () => {
    const client = new EtcdLockClient({ hosts: etcdServer.endpoint });
    closers.push(() => client.close());
    const report = await client.checkServer();
    expect(report.backend).toBe('etcd');
    expect(report.findings.find((f) => f.check === 'server-version')?.message).toMatch(
      /^etcd 3\.\d+\.\d+, 1 member/,
    );
    expect(checks(report.findings, 'info')).toContain('replication');
    expect(checks(report.findings, 'warning')).toEqual([]);

    const admin = new Etcd3({ hosts: etcdServer.endpoint });
    closers.push(async () => admin.close());
    const status = await admin.maintenance.status();
    await admin.maintenance.alarm({
      action: 'Activate',
      memberID: status.header.member_id,
      alarm: 'Nospace',
    });
    try {
      const alarmed = await client.checkServer();
      expect(checks(alarmed.findings, 'warning')).toEqual(['alarm']);
      expect(alarmed.findings.find((f) => f.check === 'alarm')?.message).toMatch(/refuses writes/);
    } finally {
      await admin.maintenance.alarm({
        action: 'Deactivate',
        memberID: status.header.member_id,
        alarm: 'Nospace',
      });
    }
  });
});

describe('ZooKeeper server checks', () => {
  it('a session timeout the server lowered is a warning naming both; one it granted is not', async () => {
    const lowered = new ZooKeeperLockClient({
      connectString: zooKeeper.connectString,
      sessionTimeoutMs: 30_000,
    });
    closers.push(() => lowered.close());
    const report = await lowered.checkServer();
    expect(report.backend).toBe('zookeeper');
    expect(report.findings.find((f) => f.check === 'server-version')?.message).toMatch(/^ZooKeeper 3\.\d+/);
    expect(checks(report.findings, 'warning')).toEqual(['session-timeout']);
    expect(report.findings.find((f) => f.check === 'session-timeout')?.message).toMatch(
      /from 30000 to 4000 ms/,
    );

    const granted = new ZooKeeperLockClient({
      connectString: zooKeeper.connectString,
      sessionTimeoutMs: 3_000,
    });
    closers.push(() => granted.close());
    expect(checks((await granted.checkServer()).findings, 'warning')).toEqual([]);
  });
});
