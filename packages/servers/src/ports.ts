import { createServer } from 'node:net';

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
