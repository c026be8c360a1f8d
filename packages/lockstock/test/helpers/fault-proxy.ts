import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on loopback between one client and one server, whose link can be broken on purpose
 * (`tc netem` is not available on this kernel and toxiproxy is not packaged):
 * - 'pass': bytes flow both ways;
 * - 'delay': each chunk is held `delayMs` (± `jitterMs`) before it goes on, in order;
 * - 'blackhole': nothing goes through either way and nothing is closed — a partition, or a paused
 *   server: connections stay open and requests time out;
 * - 'half-open': client → server goes on, server → client is dropped (the answers never arrive);
 * - reset(): every connection is closed with a TCP RST at once (new ones are accepted).
 * Bytes that arrive while blackholed are dropped, as a partition drops packets (TCP would retransmit
 * them; a dropped chunk here makes the stream unusable — which is what a client sees after a long
 * partition: it reconnects).
 * By default a side that closes is closed on the other side too, even while blackholed. With
 * `{ closes: 'dropped-while-dark' }` a close made while blackholed stays unseen by the other side
 * until the link heals (any other mode) or `reset()`: in a real partition the FIN is lost as well, and
 * a server keeps the session of a client that gave up on it.
 */
export type LinkMode = 'pass' | 'delay' | 'blackhole' | 'half-open';

export class FaultProxy {
  private mode: LinkMode = 'pass';
  private delayMs = 0;
  private jitterMs = 0;
  private readonly pairs = new Set<[Socket, Socket]>();
  /** Pairs one side of which closed while blackholed, the other side not told yet. */
  private readonly unseenCloses = new Set<[Socket, Socket]>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly closes: 'forwarded' | 'dropped-while-dark',
  ) {}

  /** Listens on a free loopback port and forwards to `target` (host:port of the real server). */
  static async start(
    target: { host: string; port: number },
    options: { closes?: 'forwarded' | 'dropped-while-dark' } = {},
  ): Promise<FaultProxy> {
    const self: { proxy?: FaultProxy } = {}; // connections arrive only once it is set (after listen)
    const server = createServer((client) => self.proxy?.connect(client, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no TCP address');
    self.proxy = new FaultProxy(server, address.port, options.closes ?? 'forwarded');
    return self.proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  set(mode: LinkMode, options: { delayMs?: number; jitterMs?: number } = {}): void {
    this.mode = mode;
    this.delayMs = options.delayMs ?? 0;
    this.jitterMs = options.jitterMs ?? 0;
    if (mode === 'blackhole') return;
    // Healed: the closes the partition swallowed arrive now.
    for (const [client, upstream] of this.unseenCloses) {
      client.destroy();
      upstream.destroy();
    }
    this.unseenCloses.clear();
  }

  /** Closes every open connection with a RST (the client sees ECONNRESET). */
  reset(): void {
    for (const [client, upstream] of this.pairs) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    this.pairs.clear();
    this.unseenCloses.clear();
  }

  async stop(): Promise<void> {
    this.reset();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private connect(client: Socket, target: { host: string; port: number }): void {
    const upstream = createConnection(target);
    const pair: [Socket, Socket] = [client, upstream];
    this.pairs.add(pair);
    const drop = () => {
      if (this.mode === 'blackhole' && this.closes === 'dropped-while-dark') {
        this.unseenCloses.add(pair);
        return;
      }
      this.pairs.delete(pair);
      this.unseenCloses.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    this.forward(client, upstream, 'up');
    this.forward(upstream, client, 'down');
  }

  private forward(from: Socket, to: Socket, direction: 'up' | 'down'): void {
    let last = Promise.resolve();
    from.on('data', (chunk: Buffer) => {
      if (this.mode === 'blackhole' || (this.mode === 'half-open' && direction === 'down')) return;
      if (this.mode !== 'delay') {
        to.write(chunk);
        return;
      }
      const ms = Math.max(0, this.delayMs + (Math.random() * 2 - 1) * this.jitterMs);
      // In order: each chunk waits for the one before it, then its own delay from its arrival.
      const arrived = Date.now();
      last = last.then(
        () => new Promise((resolve) => setTimeout(resolve, Math.max(0, arrived + ms - Date.now()))),
      );
      void last.then(() => to.writable && to.write(chunk));
    });
  }
}
