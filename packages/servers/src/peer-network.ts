import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer, Socket, type Server } from 'node:net';

/**
 * The peer links of a replicated server (a ZooKeeper ensemble's quorum and election ports, an etcd
 * cluster's peer URLs) routed through small TCP proxies on loopback, one in front of each member's
 * peer port, so a test can partition the members: `partition([a], [b, c])` cuts every link between
 * the groups, both ways, without touching the processes.
 *
 * A proxy learns which member dialed it from the kernel (Linux): the connecting socket is found in
 * /proc/net/tcp{,6} by its ports, and its inode in the members' open file descriptors — so a link is
 * known per pair of members, whatever the protocol. A cut link is a black hole, as a partition on a
 * real network is: its open connections stop carrying bytes (both ends stay open, and hear nothing),
 * and a new connection is accepted and then ignored. Healing closes the black-holed connections; the
 * members dial again and the proxies forward as before.
 */
export class PeerNetwork {
  private readonly pids = new Map<string, () => number | undefined>();
  private readonly servers: Server[] = [];
  private readonly links = new Set<Link>();
  /** Each member's group while partitioned; empty: every link is up. */
  private groups = new Map<string, number>();

  /** Tells the network how to find a member's process (its pid changes when it restarts). */
  member(name: string, pid: () => number | undefined): void {
    this.pids.set(name, pid);
  }

  /** A proxy in front of `to`'s peer port `targetPort`: peers are given its port instead. */
  async proxy(to: string, targetPort: number, port = 0): Promise<number> {
    const server = createServer({ pauseOnConnect: true }, (socket) => this.accept(socket, to, targetPort));
    this.servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    server.on('error', () => undefined);
    return (server.address() as { port: number }).port;
  }

  /**
   * Cuts every link between members of different groups (both ways); a member named in no group is
   * cut off from all. Replaces any partition in force.
   */
  partition(...groups: readonly (readonly string[])[]): void {
    this.groups = new Map(groups.flatMap((group, i) => group.map((name) => [name, i] as const)));
    for (const link of this.links) if (!this.open(link.from, link.to)) link.blackhole();
  }

  /** Cuts `name` off from every other member: a minority of one. */
  isolate(name: string): void {
    this.partition(
      [name],
      [...this.pids.keys()].filter((other) => other !== name),
    );
  }

  /** Every link up again: black-holed connections are closed, new ones forwarded. */
  heal(): void {
    this.groups = new Map();
    for (const link of [...this.links]) if (link.cut) link.close();
  }

  /** Whether the link from `from` to `to` carries bytes now (an unknown dialer: only while all are up). */
  open(from: string | undefined, to: string): boolean {
    if (this.groups.size === 0) return true;
    if (from === undefined) return false;
    const a = this.groups.get(from);
    return a !== undefined && a === this.groups.get(to);
  }

  async close(): Promise<void> {
    for (const link of [...this.links]) link.close();
    await Promise.all(this.servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }

  private accept(socket: Socket, to: string, targetPort: number): void {
    socket.on('error', () => undefined);
    const from = this.dialer(socket);
    const link = new Link(socket, from, to, () => this.links.delete(link));
    this.links.add(link);
    if (this.open(from, to)) link.forward(targetPort);
    else link.blackhole();
  }

  /** The member whose process holds the other end of `socket`, if one does. */
  private dialer(socket: Socket): string | undefined {
    const inode = socketInode(socket.remotePort ?? 0, socket.localPort ?? 0);
    if (inode === undefined) return undefined;
    for (const [name, pidOf] of this.pids) {
      const pid = pidOf();
      if (pid !== undefined && holdsSocket(pid, inode)) return name;
    }
    return undefined;
  }
}

/** One proxied connection, from a member (if known) to a member. */
class Link {
  private upstream: Socket | undefined;
  cut = false;

  constructor(
    private readonly downstream: Socket,
    readonly from: string | undefined,
    readonly to: string,
    private readonly onClose: () => void,
  ) {
    downstream.once('close', () => this.close());
  }

  forward(port: number): void {
    const upstream = new Socket();
    this.upstream = upstream;
    upstream.on('error', () => undefined);
    upstream.once('close', () => this.close());
    upstream.connect(port, '127.0.0.1', () => {
      if (this.cut) return;
      this.downstream.pipe(upstream);
      upstream.pipe(this.downstream);
      this.downstream.resume();
    });
  }

  /** Stops carrying bytes: what arrives on either end is read and dropped. */
  blackhole(): void {
    this.cut = true;
    this.downstream.unpipe();
    this.upstream?.unpipe();
    for (const end of [this.downstream, this.upstream]) {
      if (!end) continue;
      end.removeAllListeners('data');
      end.on('data', () => undefined);
      end.resume();
    }
  }

  close(): void {
    this.downstream.destroy();
    this.upstream?.destroy();
    this.onClose();
  }
}

/** The inode of the socket whose local port is `localPort` and remote port `remotePort`. */
function socketInode(localPort: number, remotePort: number): string | undefined {
  const local = `:${hexPort(localPort)}`;
  const remote = `:${hexPort(remotePort)}`;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[1]?.endsWith(local) && fields[2]?.endsWith(remote)) return fields[9];
    }
  }
  return undefined;
}

const hexPort = (port: number) => port.toString(16).toUpperCase().padStart(4, '0');

function holdsSocket(pid: number, inode: string): boolean {
  const target = `socket:[${inode}]`;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === target) return true;
    } catch {
      // closed meanwhile
    }
  }
  return false;
}
