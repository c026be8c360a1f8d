import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MissingBinaryError, ServerStartError } from './errors.js';
import { ManagedProcess } from './managed.js';
import { ManagedServer } from './managed-server.js';
import { PeerNetwork } from './peer-network.js';
import { installDebianPackages, whichExecutable } from './packages.js';
import { freePorts } from './ports.js';
import { httpRequest } from './probes.js';
import { spawnLogged, terminate, waitUntilReady, type StartedProcess } from './process.js';

const DEBIAN_BINARY = '/usr/bin/etcd';
const INSTALL = 'sudo apt-get update && sudo apt-get install -y --no-install-recommends etcd-server';

/**
 * Finds an `etcd` binary: `LOCKSTOCK_ETCD`, then PATH, then Debian's /usr/bin/etcd. As root it
 * installs Debian's `etcd-server` when none is found (no service is started: it runs as our child
 * only); otherwise it throws MissingBinaryError with the command to run.
 */
export function findEtcd(): string {
  const override = process.env.LOCKSTOCK_ETCD;
  if (override) return override;
  const found = () => whichExecutable('etcd') ?? (existsSync(DEBIAN_BINARY) ? DEBIAN_BINARY : undefined);
  const before = found();
  if (before) return before;
  installDebianPackages('etcd', ['etcd-server']);
  const after = found();
  if (!after) throw new MissingBinaryError('etcd', INSTALL);
  return after;
}

const portTaken = (error: unknown) =>
  error instanceof ServerStartError && /address already in use/i.test(error.logTail);

/** True when `GET /health` answers `{"health":"true"}` (the member sees a leader). */
async function healthy(endpoint: string): Promise<boolean> {
  const { status, body } = await httpRequest(`${endpoint}/health`, { timeoutMs: 1_000 });
  return status === 200 && (JSON.parse(body) as { health?: unknown }).health === 'true';
}

interface MemberPorts {
  name: string;
  client: number;
  peer: number;
  /** The proxy in front of the peer port (a partitionable cluster): what the member advertises to peers. */
  proxy?: number;
}

const url = (port: number) => `http://127.0.0.1:${port}`;

/**
 * The command line of one member. The peer URLs are always set: without them etcd binds
 * localhost:2380 (and 2379), and parallel runs collide. Logs go to stderr (zap), i.e. the log file.
 */
function memberArgs(me: MemberPorts, all: readonly MemberPorts[], dataDir: string, token: string) {
  const advertised = (m: MemberPorts) => url(m.proxy ?? m.peer);
  return [
    '--name', me.name,
    '--data-dir', dataDir,
    '--listen-client-urls', url(me.client),
    '--advertise-client-urls', url(me.client),
    '--listen-peer-urls', url(me.peer),
    '--initial-advertise-peer-urls', advertised(me),
    '--initial-cluster', all.map((m) => `${m.name}=${advertised(m)}`).join(','),
    // Ignored once the data dir exists (a restart rejoins with what it stored).
    '--initial-cluster-state', 'new',
    '--initial-cluster-token', token,
    '--logger', 'zap',
    '--log-outputs', 'stderr',
  ]; // prettier-ignore
}

export interface EtcdServerOptions {
  /** Extra `etcd` arguments (e.g. `['--auto-compaction-retention', '1']`). */
  args?: string[];
  /** How long to wait for `/health`, ms. @default 30000 */
  timeoutMs?: number;
}

/**
 * A real etcd on loopback: one client port and one peer port, data and log (`<name>.log`) in a temp
 * dir. Ready when `GET /health` says `"true"`. Standalone from EtcdServer.start(), or a member of an
 * EtcdCluster: a member's stop() keeps its data for restart(); the cluster's stop() removes it all.
 * The etcd API's JSON gateway answers on `endpoint` (e.g. `POST /v3/kv/put`, `/v3/lease/grant`).
 * Leases are at least 2 s long, whatever the TTL asked for.
 */
export class EtcdServer extends ManagedServer {
  readonly host = '127.0.0.1';

  private constructor(
    readonly name: string,
    /** The client port. */
    readonly port: number,
    readonly peerPort: number,
    /** The temp dir holding the data dir and the log file (shared by a cluster's members). */
    readonly dir: string,
    ownsDir: boolean,
    managed: ManagedProcess,
  ) {
    super(managed, ownsDir ? dir : undefined); // a cluster member's data stays for the cluster
  }

  /** `http://127.0.0.1:<port>`, what etcd clients take. */
  get endpoint(): string {
    return url(this.port);
  }

  get logFile(): string {
    return join(this.dir, `${this.name}.log`);
  }

  static async start(options: EtcdServerOptions = {}): Promise<EtcdServer> {
    const binary = findEtcd();
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-etcd-'));
    for (let attempt = 1; ; attempt++) {
      const [client, peer] = (await freePorts(2)) as [number, number];
      const me = { name: 'n1', client, peer };
      const args = [
        ...memberArgs(me, [me], join(dir, 'n1.etcd'), `lockstock-${client}`),
        ...(options.args ?? []),
      ];
      const launch = launcher(binary, me, dir, args, options.timeoutMs ?? 30_000);
      try {
        return new EtcdServer(me.name, client, peer, dir, true, await ManagedProcess.start(launch));
      } catch (error) {
        if (!portTaken(error) || attempt >= 5) {
          rmSync(dir, { recursive: true, force: true });
          throw error;
        }
      }
    }
  }

  /** @internal EtcdCluster's constructor of members. */
  static member(me: MemberPorts, dir: string, managed: ManagedProcess): EtcdServer {
    return new EtcdServer(me.name, me.client, me.peer, dir, false, managed);
  }

  /** `GET /health` says `"true"`: the server answers and sees a leader. */
  healthy(): Promise<boolean> {
    return healthy(this.endpoint).catch(() => false);
  }
}

/** Spawns the member and resolves once its `/health` is true; kills it if it does not get there. */
function launcher(binary: string, me: MemberPorts, dir: string, args: string[], timeoutMs: number) {
  return async (): Promise<StartedProcess> => {
    const started = spawnLogged(binary, args, { logFile: join(dir, `${me.name}.log`), cwd: dir });
    try {
      await waitUntilReady(`etcd ${me.name} on port ${me.client}`, [started], () => healthy(url(me.client)), {
        timeoutMs,
      });
      return started;
    } catch (error) {
      await terminate(started, 'SIGKILL');
      throw error;
    }
  };
}

export interface EtcdClusterOptions {
  /** Members; 3 tolerates one down. @default 3 */
  members?: number;
  /** Extra `etcd` arguments for every member. */
  args?: string[];
  /** How long to wait for `/health` on every member, ms. @default 30000 */
  timeoutMs?: number;
  /**
   * Route the members' peer traffic through proxies (`network`), so a test can partition the cluster:
   * each member listens on its peer port and advertises the proxy in front of it. @default false
   */
  partitionable?: boolean;
}

/**
 * An etcd cluster of real processes on loopback (members `n1`, `n2`, …, a token unique to the run),
 * all in one temp dir. Ready when `/health` is true on every member. Each member can be stopped,
 * killed, paused and restarted on its own (`members`).
 */
export class EtcdCluster {
  private constructor(
    readonly members: readonly EtcdServer[],
    readonly dir: string,
    /** The proxies of the members' peer links (`partitionable`): members are named n1, n2, … */
    readonly network?: PeerNetwork,
  ) {}

  /** Every member's client URL, what etcd clients take as `hosts`. */
  get endpoints(): string[] {
    return this.members.map((member) => member.endpoint);
  }

  static async start(options: EtcdClusterOptions = {}): Promise<EtcdCluster> {
    const binary = findEtcd();
    const count = options.members ?? 3;
    if (!Number.isInteger(count) || count < 1) throw new RangeError(`members must be ≥ 1, got ${count}`);
    const timeoutMs = options.timeoutMs ?? 30_000;
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-etcd-cluster-'));
    for (let attempt = 1; ; attempt++) {
      const ports = await freePorts(2 * count);
      const all: MemberPorts[] = Array.from({ length: count }, (_, i) => ({
        name: `n${i + 1}`,
        client: ports[2 * i]!,
        peer: ports[2 * i + 1]!,
      }));
      const network = options.partitionable ? new PeerNetwork() : undefined;
      for (const me of network ? all : []) me.proxy = await network!.proxy(me.name, me.peer);
      const token = `lockstock-${all[0]!.client}-${Date.now()}`;
      const argsOf = (me: MemberPorts) => [
        ...memberArgs(me, all, join(dir, `${me.name}.etcd`), token),
        ...(options.args ?? []),
      ];
      const started = all.map((me) =>
        spawnLogged(binary, argsOf(me), { logFile: join(dir, `${me.name}.log`), cwd: dir }),
      );
      all.forEach((me, i) => network?.member(me.name, () => started[i]?.child.pid));
      try {
        await waitUntilReady(
          `etcd cluster of ${count}`,
          started,
          async () =>
            (await Promise.all(all.map((me) => healthy(url(me.client)).catch(() => false)))).every(Boolean),
          { timeoutMs },
        );
      } catch (error) {
        await Promise.all(started.map((s) => terminate(s, 'SIGKILL')));
        await network?.close();
        if (!portTaken(error) || attempt >= 3) {
          rmSync(dir, { recursive: true, force: true });
          throw error;
        }
        for (const me of all) rmSync(join(dir, `${me.name}.etcd`), { recursive: true, force: true });
        continue;
      }
      const members = all.map((me, i) =>
        EtcdServer.member(
          me,
          dir,
          new ManagedProcess(launcher(binary, me, dir, argsOf(me), timeoutMs), started[i]),
        ),
      );
      members.forEach((member) => network?.member(member.name, () => member.pid));
      return new EtcdCluster(members, dir, network);
    }
  }

  /**
   * SIGKILLs every member at once and removes the temp dir. (SIGTERM to all members at once costs
   * about 7 s: the leader tries to hand leadership to a peer that is shutting down too.)
   */
  async stop(): Promise<void> {
    await Promise.all(this.members.map((member) => member.kill()));
    await this.network?.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
