import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServerStartError } from './errors.js';
import { ManagedProcess } from './managed.js';
import { ManagedServer } from './managed-server.js';
import { PeerNetwork } from './peer-network.js';
import { findZooKeeper, type ZooKeeperInstallation } from './zookeeper-install.js';
import { freePorts } from './ports.js';
import { fourLetterWord, modeOf } from './probes.js';
import { spawnLogged, terminate, waitUntilReady, type StartedProcess } from './process.js';

export { findZooKeeper, type ZooKeeperInstallation } from './zookeeper-install.js';

/** zoo.cfg settings every launcher uses: loopback only, no admin server, every four-letter word. */
function baseConfig(dataDir: string, port: number, tickTimeMs: number) {
  return {
    tickTime: tickTimeMs,
    dataDir,
    clientPort: port,
    clientPortAddress: '127.0.0.1',
    // The Jetty admin server would take port 8080.
    'admin.enableServer': 'false',
    // ruok, srvr, stat, mntr, conf, … for readiness checks and tests.
    '4lw.commands.whitelist': '*',
    // The default allows 60 connections per IP, which one test process reaches easily.
    maxClientCnxns: 0,
  };
}

function writeConfig(file: string, settings: Record<string, string | number>): void {
  const lines = Object.entries(settings).map(([key, value]) => `${key}=${value}`);
  writeFileSync(file, `${lines.join('\n')}\n`);
}

/** Spawns one ZooKeeper JVM on a config file, logging to `logFile`. */
function spawnZooKeeper(
  install: ZooKeeperInstallation,
  dir: string,
  config: string,
  logFile: string,
  properties: Record<string, string | number> = {},
) {
  const args = [
    ...Object.entries(properties).map(([key, value]) => `-D${key}=${value}`),
    '-Xmx256m',
    '-XX:+UseSerialGC',
    // No /tmp/hsperfdata_<user>/<pid>, which a SIGKILLed JVM leaves behind.
    '-XX:-UsePerfData',
    `-Djava.io.tmpdir=${dir}`,
    '-cp', install.classpath,
    'org.apache.zookeeper.server.quorum.QuorumPeerMain',
    config,
  ]; // prettier-ignore
  return spawnLogged(install.java, args, { logFile, cwd: dir });
}

const portTaken = (error: unknown) =>
  error instanceof ServerStartError && /Address already in use|BindException/i.test(error.logTail);

/**
 * A standalone server is ready when `ruok` gets `imok` and `srvr` says `Mode: standalone`: `imok` comes
 * while the server is still loading ("This ZooKeeper instance is not currently serving requests").
 */
async function standaloneReady(port: number): Promise<boolean> {
  return (
    (await fourLetterWord(port, 'ruok', { timeoutMs: 1_000 })) === 'imok' &&
    (await modeAt(port)) === 'standalone'
  );
}

/** The node's `Mode:` (leader, follower, standalone, …), or undefined when it does not answer. */
async function modeAt(port: number): Promise<string | undefined> {
  return modeOf(await fourLetterWord(port, 'srvr', { timeoutMs: 1_000 }).catch(() => ''));
}

const inQuorum = (mode: string | undefined) => mode === 'leader' || mode === 'follower';

export interface ZooKeeperServerOptions {
  /**
   * ZooKeeper's tick, ms. The server bounds every session timeout to 2–20 ticks, so a small tick
   * makes session expiry quick to test. @default 2000 (ZooKeeper's default)
   */
  tickTimeMs?: number;
  /** Extra zoo.cfg settings (override the defaults). */
  config?: Record<string, string | number>;
  /**
   * Java system properties (`-Dkey=value`), for settings zoo.cfg cannot carry, such as
   * `znode.container.checkIntervalMs` (how often the server reaps empty container nodes; 60 s by default).
   */
  systemProperties?: Record<string, string | number>;
  /** How long to wait for readiness, ms. @default 30000 (a JVM on a busy machine is slow) */
  timeoutMs?: number;
}

/**
 * A standalone ZooKeeper server (a JVM child process) on a free loopback port, its data, config and
 * log (`out.log`) in a temp dir removed by stop(). Ready when it answers `ruok` with `imok` and
 * serves requests (`srvr` says `Mode: standalone`).
 */
export class ZooKeeperServer extends ManagedServer {
  readonly host = '127.0.0.1';

  private constructor(
    readonly port: number,
    readonly dir: string,
    readonly tickTimeMs: number,
    managed: ManagedProcess,
  ) {
    super(managed, dir);
  }

  /** `127.0.0.1:<port>`, what ZooKeeper clients take. */
  get connectString(): string {
    return `${this.host}:${this.port}`;
  }

  /** The server's stdout and stderr. */
  get logFile(): string {
    return join(this.dir, 'out.log');
  }

  static async start(options: ZooKeeperServerOptions = {}): Promise<ZooKeeperServer> {
    const install = findZooKeeper();
    const tickTimeMs = options.tickTimeMs ?? 2_000;
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-zookeeper-'));
    mkdirSync(join(dir, 'data'));
    const config = join(dir, 'zoo.cfg');
    const logFile = join(dir, 'out.log');
    for (let attempt = 1; ; attempt++) {
      const [port] = (await freePorts(1)) as [number];
      writeConfig(config, { ...baseConfig(join(dir, 'data'), port, tickTimeMs), ...options.config });
      const launch = async (): Promise<StartedProcess> => {
        const started = spawnZooKeeper(install, dir, config, logFile, options.systemProperties);
        try {
          await waitUntilReady(`zookeeper on port ${port}`, [started], () => standaloneReady(port), {
            timeoutMs: options.timeoutMs ?? 30_000,
          });
          return started;
        } catch (error) {
          await terminate(started, 'SIGKILL');
          throw error;
        }
      };
      try {
        return new ZooKeeperServer(port, dir, tickTimeMs, await ManagedProcess.start(launch));
      } catch (error) {
        if (!portTaken(error) || attempt >= 5) {
          rmSync(dir, { recursive: true, force: true });
          throw error;
        }
      }
    }
  }

  /** Sends a four-letter word (`ruok`, `srvr`, `mntr`, `cons`, …) and resolves with the answer. */
  fourLetterWord(word: string, timeoutMs?: number): Promise<string> {
    return fourLetterWord(this.port, word, { host: this.host, timeoutMs });
  }
}

/** One member of a ZooKeeperEnsemble: its own ports, data dir and JVM. */
export class ZooKeeperNode extends ManagedServer {
  readonly host = '127.0.0.1';

  constructor(
    /** The node's `myid` (1, 2, 3, …). */
    readonly id: number,
    /** The client port. */
    readonly port: number,
    readonly quorumPort: number,
    readonly electionPort: number,
    /** The node's own dir (config, data, `out.log`), inside the ensemble's (its data outlives stop()). */
    readonly dir: string,
    managed: ManagedProcess,
  ) {
    super(managed, undefined);
  }

  get connectString(): string {
    return `${this.host}:${this.port}`;
  }

  get logFile(): string {
    return join(this.dir, 'out.log');
  }

  /** `leader`, `follower`, … from `srvr`; undefined when the node does not answer (down, paused, no quorum). */
  mode(): Promise<string | undefined> {
    return modeAt(this.port);
  }

  fourLetterWord(word: string, timeoutMs?: number): Promise<string> {
    return fourLetterWord(this.port, word, { host: this.host, timeoutMs });
  }
}

export interface ZooKeeperEnsembleOptions {
  /** Members; 3 tolerates one down, 5 two. @default 3 */
  nodes?: number;
  /**
   * ZooKeeper's tick, ms (initLimit is 20 ticks, syncLimit 10). Sessions are bounded to 2–20 ticks.
   * @default 500
   */
  tickTimeMs?: number;
  /** Extra zoo.cfg settings for every node. */
  config?: Record<string, string | number>;
  /** How long to wait for a leader and every follower, ms. @default 60000 (JVMs on a busy machine) */
  timeoutMs?: number;
  /**
   * Route every node's quorum and election traffic to its peers through proxies (`network`), so a
   * test can partition the ensemble. Each node's own `server.N` line keeps its real ports (it binds
   * them); the other lines name the proxies in front of the other nodes. @default false
   */
  partitionable?: boolean;
}

/**
 * A ZooKeeper ensemble of real JVMs on loopback: per node a client, a quorum and an election port, a
 * `myid` and its own data dir, all in one temp dir removed by stop(). Ready when every node's `srvr`
 * says `Mode: leader` or `Mode: follower` (`ruok` answers before there is a quorum). Each node can be
 * stopped, killed, paused and restarted on its own (`nodes`).
 */
export class ZooKeeperEnsemble {
  private constructor(
    readonly nodes: readonly ZooKeeperNode[],
    readonly dir: string,
    readonly tickTimeMs: number,
    /** The proxies of the nodes' peer links (`partitionable`): nodes are named by their id ("1", "2", …). */
    readonly network?: PeerNetwork,
  ) {}

  /** `127.0.0.1:<p1>,127.0.0.1:<p2>,…`: every member, as ZooKeeper clients take it. */
  get connectString(): string {
    return this.nodes.map((node) => node.connectString).join(',');
  }

  static async start(options: ZooKeeperEnsembleOptions = {}): Promise<ZooKeeperEnsemble> {
    const install = findZooKeeper();
    const count = options.nodes ?? 3;
    if (!Number.isInteger(count) || count < 2) throw new RangeError(`nodes must be ≥ 2, got ${count}`);
    const tickTimeMs = options.tickTimeMs ?? 500;
    const timeoutMs = options.timeoutMs ?? 60_000;
    const dir = mkdtempSync(join(tmpdir(), 'lockstock-zookeeper-ensemble-'));
    for (let attempt = 1; ; attempt++) {
      const ports = await freePorts(3 * count);
      const ids = Array.from({ length: count }, (_, i) => i + 1);
      const portsOf = (id: number) => {
        const [client, quorum, election] = ports.slice(3 * (id - 1), 3 * id) as [number, number, number];
        return { client, quorum, election };
      };
      const network = options.partitionable ? new PeerNetwork() : undefined;
      const proxied = new Map<number, { quorum: number; election: number }>();
      for (const id of network ? ids : []) {
        const { quorum, election } = portsOf(id);
        proxied.set(id, {
          quorum: await network!.proxy(String(id), quorum),
          election: await network!.proxy(String(id), election),
        });
      }
      /** The `server.N` lines as node `self` sees them: its own real ports, the others' proxies. */
      const serversFor = (self: number) =>
        Object.fromEntries(
          ids.map((id) => {
            const ports = id === self ? portsOf(id) : (proxied.get(id) ?? portsOf(id));
            return [`server.${id}`, `127.0.0.1:${ports.quorum}:${ports.election}`];
          }),
        );
      const spawnNode = (id: number) => {
        const nodeDir = join(dir, `n${id}`);
        return spawnZooKeeper(install, nodeDir, join(nodeDir, 'zoo.cfg'), join(nodeDir, 'out.log'));
      };
      for (const id of ids) {
        const nodeDir = join(dir, `n${id}`);
        rmSync(nodeDir, { recursive: true, force: true });
        mkdirSync(join(nodeDir, 'data'), { recursive: true });
        writeFileSync(join(nodeDir, 'data', 'myid'), `${id}\n`);
        writeConfig(join(nodeDir, 'zoo.cfg'), {
          ...baseConfig(join(nodeDir, 'data'), portsOf(id).client, tickTimeMs),
          initLimit: 20,
          syncLimit: 10,
          ...serversFor(id),
          ...options.config,
        });
      }
      const started = ids.map(spawnNode);
      ids.forEach((id, i) => network?.member(String(id), () => started[i]?.child.pid));
      try {
        await waitUntilReady(
          `zookeeper ensemble of ${count}`,
          started,
          async () => {
            const modes = await Promise.all(ids.map((id) => modeAt(portsOf(id).client)));
            return modes.every(inQuorum);
          },
          { timeoutMs, intervalMs: 200 },
        );
      } catch (error) {
        await Promise.all(started.map((s) => terminate(s, 'SIGKILL')));
        await network?.close();
        if (!portTaken(error) || attempt >= 3) {
          rmSync(dir, { recursive: true, force: true });
          throw error;
        }
        continue;
      }
      const nodes = ids.map((id, i) => {
        const { client, quorum, election } = portsOf(id);
        const relaunch = async (): Promise<StartedProcess> => {
          const again = spawnNode(id);
          try {
            await waitUntilReady(
              `zookeeper node ${id} on port ${client}`,
              [again],
              async () => inQuorum(await modeAt(client)),
              { timeoutMs, intervalMs: 200 },
            );
            return again;
          } catch (error) {
            await terminate(again, 'SIGKILL');
            throw error;
          }
        };
        const managed = new ManagedProcess(relaunch, started[i]);
        return new ZooKeeperNode(id, client, quorum, election, join(dir, `n${id}`), managed);
      });
      nodes.forEach((node) => network?.member(String(node.id), () => node.pid));
      return new ZooKeeperEnsemble(nodes, dir, tickTimeMs, network);
    }
  }

  /** The node that says it leads, if one does right now. */
  async leader(): Promise<ZooKeeperNode | undefined> {
    const modes = await Promise.all(this.nodes.map((node) => node.mode()));
    return this.nodes[modes.indexOf('leader')];
  }

  /**
   * Waits until every running, unpaused node is leader or follower and one of them leads, e.g.
   * after stopping the leader. Throws after `timeoutMs`.
   */
  async waitForQuorum(timeoutMs = 30_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const up = this.nodes.filter((node) => node.running && !node.paused);
      const modes = await Promise.all(up.map((node) => node.mode()));
      if (modes.every(inQuorum) && modes.includes('leader')) return;
      if (performance.now() > deadline) {
        const seen = up.map((node, i) => `node ${node.id}: ${modes[i] ?? 'no answer'}`).join(', ');
        throw new Error(`the ensemble has no quorum after ${timeoutMs} ms (${seen})`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** Stops every node (SIGTERM) and removes the ensemble's temp dir. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
    await this.network?.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** SIGKILLs every node; the data stays (each node can restart()). */
  async kill(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.kill()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
