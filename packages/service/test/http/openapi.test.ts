import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import { OPERATIONS } from '../../src/http/openapi.js';
import { useSaleStack } from '../helpers/sale.js';

/**
 * The OpenAPI document (GET /docs/json) is complete enough to generate a client from: every operation
 * named and tagged, shared schemas named, errors described. Proved by doing it: openapi-typescript
 * generates the types, a client written against them with openapi-fetch type-checks (tsc, strict) —
 * a wrong path, method, parameter or body would not compile — and then buys through the real routes.
 */
const SECRET = 'openapi-secret-0123456789abcdef';
const env = useSaleStack();
let app: FastifyInstance;
let address: string;
let document: OpenApi;
let dir: string;

interface Operation {
  operationId?: string;
  tags?: string[];
  responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
}
interface OpenApi {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
  tags: Array<{ name: string }>;
}

const workspace = fileURLToPath(new URL('../../../../', import.meta.url));
const require = createRequire(import.meta.url);

beforeAll(async () => {
  app = await buildApp({
    service: env.service,
    context: env.context,
    db: env.db,
    metrics: env.metrics,
    config: { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 },
  });
  address = await app.listen({ port: 0, host: '127.0.0.1' });
  document = (await app.inject({ url: '/docs/json' })).json();
  dir = mkdtempSync(join(tmpdir(), 'lockstock-openapi-'));
}, 120_000);

afterAll(async () => {
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const operations = () =>
  Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
  );

describe('the OpenAPI document', () => {
  it('names and tags every operation (unique ids), names its shared schemas, and describes errors', () => {
    const all = operations();
    expect(all.length).toBeGreaterThanOrEqual(Object.keys(OPERATIONS).length);
    const unnamed = all.filter(({ operation }) => !operation.operationId || !operation.tags?.length);
    expect(unnamed.map(({ method, path }) => `${method} ${path}`)).toEqual([]);
    const ids = all.map(({ operation }) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const tags = new Set(document.tags.map((t) => t.name));
    for (const { operation } of all) for (const tag of operation.tags ?? []) expect(tags).toContain(tag);

    const schemaNames = Object.keys(document.components.schemas);
    expect(schemaNames).toContain('Error');
    expect(schemaNames.filter((name) => /^def-\d+$/.test(name))).toEqual([]);
    // Every JSON API operation says how it fails, with the one error shape.
    for (const { path, method, operation } of all.filter(({ path }) => path.startsWith('/api/sales'))) {
      const errors = Object.entries(operation.responses).filter(([status]) => Number(status) >= 400);
      expect(errors.length, `${method} ${path}`).toBeGreaterThan(0);
      for (const [status, response] of errors)
        expect(JSON.stringify(response.content), `${method} ${path} ${status}`).toContain(
          '#/components/schemas/Error',
        );
    }
  });

  it('generates a typed client (openapi-typescript + openapi-fetch) that compiles, buys through the real routes, and refuses a route the API lacks', async () => {
    const spec = join(dir, 'openapi.json');
    writeFileSync(spec, JSON.stringify(document));
    const generator = join(workspace, 'node_modules/openapi-typescript/bin/cli.js');
    execFileSync(process.execPath, [generator, spec, '-o', join(dir, 'api.d.ts')], { stdio: 'pipe' });
    // The client, as a user would write it against the generated types.
    writeFileSync(
      join(dir, 'client.ts'),
      `import createClient from 'openapi-fetch';
import type { paths } from './api.js';

const [baseUrl, admin, buyer] = process.argv.slice(2) as [string, string, string];
const client = createClient<paths>({ baseUrl });
const created = await client.POST('/api/sales', {
  headers: { authorization: \`Bearer \${admin}\` },
  body: { name: 'typed client sale', stock: 3, perUserLimit: 1 },
});
if (!created.data) throw new Error(\`createSale: \${JSON.stringify(created.error)}\`);
const saleId: string = created.data.id;
const bought = await client.POST('/api/sales/{id}/orders', {
  params: { path: { id: saleId }, header: { 'idempotency-key': 'typed-1' } },
  headers: { authorization: \`Bearer \${buyer}\` },
  body: { quantity: 1 },
});
if (!bought.data) throw new Error(\`buy: \${JSON.stringify(bought.error)}\`);
const orderId: string = bought.data.orderId;
const again = await client.POST('/api/sales/{id}/orders', {
  params: { path: { id: saleId } },
  headers: { authorization: \`Bearer \${buyer}\` },
  body: { quantity: 1 },
});
const refusal: string | undefined = again.error?.error;
const sale = await client.GET('/api/sales/{id}', { params: { path: { id: saleId } } });
const order = await client.GET('/api/orders/{id}', {
  params: { path: { id: orderId } },
  headers: { authorization: \`Bearer \${buyer}\` },
});
console.log(JSON.stringify({ status: bought.response.status, orderId, refusal, remaining: sale.data?.remaining, order: order.data?.status }));
`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noUncheckedIndexedAccess: true,
          skipLibCheck: false,
          types: ['node'],
          outDir: 'out',
        },
        files: ['client.ts', 'wrong.ts'],
      }),
    );
    // And one that calls a route the API does not have: it must not compile (the types are not `any`).
    writeFileSync(
      join(dir, 'wrong.ts'),
      `import createClient from 'openapi-fetch';
import type { paths } from './api.js';
const client = createClient<paths>({ baseUrl: 'http://127.0.0.1' });
await client.POST('/api/sales/{id}/refund', { params: { path: { id: '1' } } });
`,
    );
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    symlinkSync(join(workspace, 'node_modules'), join(dir, 'node_modules'));
    const tsc = require.resolve('typescript/bin/tsc');
    // One compile of both (tsc is the slow part): errors in wrong.ts only; client.ts is emitted.
    const compiled = await promisify(execFile)(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' }).then(
      () => '',
      (error: { stdout: string }) => error.stdout,
    );
    const errorFiles = new Set(
      [...compiled.matchAll(/^(\S+?)\(\d+,\d+\): error/gm)].map((m) => basename(m[1] as string)),
    );
    expect([...errorFiles], compiled).toEqual(['wrong.ts']);

    const admin = signToken(SECRET, 'typed-admin', { admin: true });
    const buyer = signToken(SECRET, 'typed-buyer');
    // Asynchronously: the server answering it runs in this process's event loop.
    const { stdout: output } = await promisify(execFile)(
      process.execPath,
      [join(dir, 'out/client.js'), address, admin, buyer],
      { encoding: 'utf8', timeout: 60_000 },
    );
    const result = JSON.parse(output.trim()) as Record<string, unknown>;
    expect(result).toMatchObject({ status: 202, refusal: 'limit_reached', remaining: 2 });
    expect(['reserved', 'confirmed']).toContain(result.order);
  });
});
