import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { signToken } from '../../http/auth.js';
import { freePort } from 'lockstock/servers';

const serverPath = fileURLToPath(new URL('./http-server.js', import.meta.url));

/** Starts http-server.js in its own process (so the load generator does not share its event loop). */
async function startServer(
  mode: 'lockstock' | 'hello',
  redisUrl: string,
  databaseUrl: string,
  secret: string,
) {
  const port = await freePort();
  const child = spawn(process.execPath, [serverPath, mode, String(port), redisUrl, databaseUrl, secret], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`benchmark server exited with ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => (child.kill('SIGTERM'), await once(child, 'exit')),
  };
}

/** `connections` keep-alive lanes POSTing for `durationMs`; responses per second. */
async function load(
  url: (n: number) => string,
  headers: (n: number) => Record<string, string>,
  options: { connections: number; durationMs: number },
) {
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections });
  const body = '{"quantity":1}';
  let n = 0;
  let stop = false;
  const send = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        url(i),
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': body.length, ...headers(i) },
        },
        (res) => {
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  // Warm-up, then measure.
  await Promise.all(Array.from({ length: options.connections }, (_, i) => send(i)));
  const timer = setTimeout(() => (stop = true), options.durationMs);
  const started = performance.now();
  let done = 0;
  await Promise.all(
    Array.from({ length: options.connections }, async () => {
      while (!stop) {
        await send(options.connections + n++);
        done++;
      }
    }),
  );
  clearTimeout(timer);
  agent.destroy();
  return (done * 1000) / (performance.now() - started);
}

/** Purchases per second through the lockstock HTTP API vs a hello-world Fastify route, same load. */
export async function benchHttp(
  redisUrl: string,
  databaseUrl: string,
  saleId: string,
  options: { connections: number; durationMs: number; tokens: number },
): Promise<{ library: number; baseline: number }> {
  const secret = 'bench-secret-0123456789abcdef';
  const tokens = Array.from({ length: options.tokens }, (_, i) =>
    signToken(secret, `h${Date.now().toString(36)}x${i}`),
  );
  const auth = (n: number) => ({ authorization: `Bearer ${tokens[n % tokens.length]}` });
  const api = await startServer('lockstock', redisUrl, databaseUrl, secret);
  const library = await load(() => `${api.url}/api/sales/${saleId}/orders`, auth, options);
  await api.stop();
  const hello = await startServer('hello', redisUrl, databaseUrl, secret);
  const baseline = await load(() => `${hello.url}/hello`, auth, options);
  await hello.stop();
  return { library, baseline };
}
