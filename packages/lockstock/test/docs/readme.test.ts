import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdServer, MariaDbServer, PostgresServer, RedisServer, ZooKeeperServer } from '@lockstock/servers';
import {
  compileBlocks,
  readmeBlocks,
  runBlock,
  serversOf,
  type Compiled,
  type CompiledBlock,
  type ReadmeBlock,
} from '../helpers/readme.js';

/**
 * The READMEs cannot drift from the API: every ```ts block is compiled with `tsc --strict` against
 * the built packages (`npm test` builds first; `lockstock` resolves to packages/lockstock/dist
 * through the workspace) and run against a private redis-server and PostgreSQL. Conventions:
 * test/helpers/readme.ts.
 */

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const READMES = [
  'README.md',
  'packages/lockstock/README.md',
  'packages/lockstock/docs/migration.md',
  'packages/lockstock/docs/backend.md',
  'packages/lockstock/docs/instrumentation.md',
  'packages/lockstock/docs/kinds.md',
  'packages/lockstock/docs/built-in-backends.md',
  'packages/lockstock/docs/safety.md',
];
const blocks: ReadmeBlock[] = READMES.flatMap((file) =>
  readmeBlocks(readFileSync(join(root, file), 'utf8'), file),
);

let dir: string;
let compiled: Compiled;
let redis: RedisServer;
let postgres: PostgresServer | undefined;
let mariadb: MariaDbServer | undefined;
let etcd: EtcdServer | undefined;
let zookeeper: ZooKeeperServer | undefined;

beforeAll(async () => {
  // Under the workspace's node_modules, so the blocks resolve `lockstock`, `ioredis` and `pg` there.
  const cache = join(dirname(createRequire(import.meta.url).resolve('ioredis/package.json')), '..', '.cache');
  mkdirSync(cache, { recursive: true });
  dir = mkdtempSync(join(cache, 'lockstock-readme-'));
  const needsPostgres = blocks.some((b) => b.mode !== 'typecheck-only' && serversOf(b).postgres);
  const needsMySql = blocks.some((b) => b.mode !== 'typecheck-only' && serversOf(b).mysql);
  const needsEtcd = blocks.some((b) => b.mode !== 'typecheck-only' && serversOf(b).etcd);
  const needsZooKeeper = blocks.some((b) => b.mode !== 'typecheck-only' && serversOf(b).zookeeper);
  [redis, postgres, mariadb, etcd, zookeeper, compiled] = await Promise.all([
    RedisServer.start(),
    needsPostgres ? PostgresServer.start() : undefined,
    needsMySql ? MariaDbServer.start() : undefined,
    needsEtcd ? EtcdServer.start() : undefined,
    needsZooKeeper ? ZooKeeperServer.start() : undefined,
    Promise.resolve().then(() =>
      compileBlocks(blocks, dir, { declarations: [join(root, 'packages/lockstock/dist')] }),
    ),
  ]);
});
afterAll(async () => {
  await Promise.all([redis?.stop(), postgres?.stop(), mariadb?.stop(), etcd?.stop(), zookeeper?.stop()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const env = () => ({
  REDIS_URL: redis.url,
  ...(postgres ? { DATABASE_URL: postgres.url } : {}),
  ...(mariadb ? { MYSQL_URL: mariadb.url } : {}),
  ...(etcd ? { ETCD_URL: etcd.endpoint } : {}),
  ...(zookeeper ? { ZOOKEEPER_CONNECT: zookeeper.connectString } : {}),
});
const compiledOf = (block: ReadmeBlock) => compiled.blocks.find((c) => c.block === block) as CompiledBlock;

describe('README code blocks', () => {
  it("compile against lockstock's published typings, which type-check themselves", () => {
    expect(compiled.libraryErrors).toEqual([]);
  });

  it('are found: both READMEs have runnable TypeScript', () => {
    for (const file of READMES) {
      expect(blocks.filter((b) => b.file === file && b.mode === 'run').length, file).toBeGreaterThan(0);
    }
  });

  it.each(blocks.map((b) => [`${b.file}:${b.line} (${b.mode})`, b] as const))('%s', async (_name, block) => {
    const { errors, js } = compiledOf(block);
    if (block.mode === 'expect-fail') {
      const fails = errors.length > 0 || (await runBlock(js, env())).code !== 0;
      expect(
        fails,
        `${block.file}:${block.line} is marked expect-fail (${block.todo}) but now compiles and runs: drop the marker`,
      ).toBe(true);
      return;
    }
    expect(errors).toEqual([]);
    if (block.mode === 'typecheck-only') return;

    // The block must connect where the test says, not to whatever listens on the default port.
    const needs = serversOf(block);
    const code = `${block.prelude}\n${block.code}`;
    if (needs.redis) expect(code, 'a runnable block reads REDIS_URL').toContain('process.env.REDIS_URL');
    if (needs.postgres)
      expect(code, 'a runnable block reads DATABASE_URL').toContain('process.env.DATABASE_URL');
    if (needs.mysql) expect(code, 'a runnable block reads MYSQL_URL').toContain('process.env.MYSQL_URL');
    if (needs.etcd) expect(code, 'a runnable block reads ETCD_URL').toContain('process.env.ETCD_URL');
    if (needs.zookeeper) {
      expect(code, 'a runnable block reads ZOOKEEPER_CONNECT').toContain('process.env.ZOOKEEPER_CONNECT');
    }
    const run = await runBlock(js, env());
    expect(run.timedOut, `did not exit by itself (a missing close()?)\n${run.output}`).toBe(false);
    expect(run.code, run.output).toBe(0);
  });
});

/**
 * The compiler options `tsc --init` writes (TypeScript 5.9), with `"types": ["node"]` as the
 * library README tells a newcomer to set: target esnext emits `await using` as it is, which Node 20
 * cannot parse — so the quick starts must not need it.
 */
const NEWCOMER_OPTIONS = {
  target: ts.ScriptTarget.ESNext,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: undefined,
  types: ['node'],
  strict: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  verbatimModuleSyntax: true,
  isolatedModules: true,
  moduleDetection: ts.ModuleDetectionKind.Force,
  skipLibCheck: true,
} satisfies ts.CompilerOptions;

describe("the quick starts, with the settings a newcomer's `tsc --init` gives", () => {
  const quickStarts = READMES.slice(0, 2).map((file) => blocks.find((b) => b.file === file) as ReadmeBlock);
  let newcomer: Compiled;
  let newcomerDir: string;
  beforeAll(() => {
    newcomerDir = join(dirname(dir), `${dir.split('/').pop()}-newcomer`);
    mkdirSync(newcomerDir, { recursive: true });
    newcomer = compileBlocks(quickStarts, newcomerDir, { compilerOptions: NEWCOMER_OPTIONS });
  });
  afterAll(() => {
    if (newcomerDir) rmSync(newcomerDir, { recursive: true, force: true });
  });

  it.each(READMES.slice(0, 2))('%s: its first block compiles and runs on this Node', async (file) => {
    const compiledBlock = newcomer.blocks.find((c) => c.block.file === file) as CompiledBlock;
    expect(compiledBlock.errors).toEqual([]);
    const run = await runBlock(compiledBlock.js, env());
    expect(run.code, run.output).toBe(0);
  });
});

describe('the README block conventions', () => {
  const parse = (markdown: string) => readmeBlocks(markdown, 'X.md');

  it('runs a block by default; typecheck-only, expect-fail and a prelude apply to the next ts block', () => {
    const markdown = [
      '```ts', // line 1
      'run();',
      '```',
      '<!-- readme-test: typecheck-only -->',
      '<!-- readme-test prelude',
      'declare function fragment(): void;',
      '-->',
      '',
      '```ts',
      'fragment();',
      '```',
      '```sh',
      'npm test',
      '```',
      '<!-- readme-test: expect-fail TODO: needs Foo.bar() -->',
      '```typescript',
      'Foo.bar();',
      '```',
    ].join('\n');
    expect(parse(markdown)).toEqual([
      { file: 'X.md', line: 2, code: 'run();', prelude: '', mode: 'run' },
      {
        file: 'X.md',
        line: 10,
        code: 'fragment();',
        prelude: 'declare function fragment(): void;',
        mode: 'typecheck-only',
      },
      {
        file: 'X.md',
        line: 17,
        code: 'Foo.bar();',
        prelude: '',
        mode: 'expect-fail',
        todo: 'TODO: needs Foo.bar()',
      },
    ]);
  });

  it('refuses a directive that does not sit right before a ts block, and an expect-fail without a TODO', () => {
    expect(() => parse('<!-- readme-test: typecheck-only -->\ntext\n```ts\nx\n```')).toThrow(/right before/);
    expect(() => parse('<!-- readme-test: typecheck-only -->\n```sh\nx\n```')).toThrow(/before a sh block/);
    expect(() => parse('<!-- readme-test: typecheck-only -->\n')).toThrow(/no ts block after it/);
    expect(() => parse('<!-- readme-test: expect-fail -->\n```ts\nx\n```')).toThrow(/needs a TODO/);
  });

  it('reports type errors at README lines, and a block that never exits as such', async () => {
    const [broken, hanging] = parse(
      ['```ts', 'const n: number = "one";', '```', '```ts', 'setInterval(() => {}, 1000);', '```'].join('\n'),
    ) as [ReadmeBlock, ReadmeBlock];
    const cache = join(dir, 'conventions');
    const [brokenOut, hangingOut] = compileBlocks([broken, hanging], cache).blocks as [
      CompiledBlock,
      CompiledBlock,
    ];
    expect(brokenOut.errors).toEqual([
      expect.stringMatching(/^X\.md:2: TS2322: Type 'string' is not assignable to type 'number'/),
    ]);
    expect(hangingOut.errors).toEqual([]);
    expect(await runBlock(hangingOut.js, {}, 1_000)).toMatchObject({ timedOut: true });
  });
});
