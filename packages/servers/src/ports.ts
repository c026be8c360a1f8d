import { createServer, type Server } from 'node:net';

/**
 * Asks the kernel for a free loopback TCP port. Another process may take it before the caller binds,
 * so server starters retry on "address in use" instead of trusting this blindly.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('could not allocate a port'))));
    });
  });
}

/**
 * `count` distinct free loopback ports (for a node that needs several, or an ensemble): every
 * listener is held open until all are allocated, so the kernel cannot hand out one port twice.
 */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      server.unref();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, host, () => resolve());
      });
      const address = server.address();
      if (typeof address !== 'object' || !address) throw new Error('could not allocate a port');
      ports.push(address.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}
