import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileBlocks, readmeBlocks, runBlock, type Compiled, type ReadmeBlock } from '../helpers/readme.js';

/**
 * A third party's backend package, as docs/backend.md tells it: lockstock (built dist/ and its
 * package.json) and @types/node in a directory outside the workspace, with no driver installed — no
 * ioredis, pg, mysql2, etcd3 or node-zookeeper-client. The guide's example and a module importing the
 * root (`lockstock`) and the SPI (`lockstock/backend`) must type-check with the library's own
 * declarations checked too (as `skipLibCheck: false` does), and the example must run.
 */

const pkgDir = fileURLToPath(new URL('../../', import.meta.url));
const require = createRequire(import.meta.url);

/** Uses a wide part of both entry points' declarations. */
const rootAndSpi: ReadmeBlock = {
  file: 'no-driver-types.test.ts',
  line: 1,
  prelude: '',
  mode: 'typecheck-only',
  code: [
    "import * as root from 'lockstock';",
    "import * as spi from 'lockstock/backend';",
    'export type Everything = [',
    '  root.Lock, root.LockClient, root.Election, root.LockHandle, root.LockError,',
    '  spi.LockBackend, spi.LockResource, spi.BackendHost, spi.LockHolder, spi.ServerWaitHooks<unknown>,',
    '  spi.SessionChecksOptions<spi.CheckedSession>, spi.LockClientBase, spi.LockElection,',
    '];',
    'export const used = [root.LockTimeoutError, spi.Busy, spi.Granted, spi.ServerWait, spi.SessionChecks];',
  ].join('\n'),
};

const blocks: ReadmeBlock[] = [
  ...readmeBlocks(readFileSync(join(pkgDir, 'docs/backend.md'), 'utf8'), 'docs/backend.md'),
  rootAndSpi,
];

let dir: string;
let compiled: Compiled;

beforeAll(() => {
  dir = mkdtempSync(join(realpathSync(tmpdir()), 'lockstock-no-drivers-'));
  const modules = join(dir, 'node_modules');
  cpSync(join(pkgDir, 'package.json'), join(modules, 'lockstock/package.json'));
  cpSync(join(pkgDir, 'dist'), join(modules, 'lockstock/dist'), { recursive: true });
  // @types/node and what it depends on, from the workspace.
  mkdirSync(join(modules, '@types'), { recursive: true });
  const typesNode = dirname(require.resolve('@types/node/package.json'));
  symlinkSync(typesNode, join(modules, '@types/node'));
  const undici = dirname(createRequire(join(typesNode, 'index.d.ts')).resolve('undici-types/package.json'));
  symlinkSync(undici, join(modules, 'undici-types'));
  compiled = compileBlocks(blocks, dir, { declarations: [join(modules, 'lockstock/dist')] });
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a backend package with no driver installed', () => {
  it('no driver is resolvable there (the check below would prove nothing otherwise)', () => {
    const resolve = createRequire(join(dir, 'x.js')).resolve;
    for (const driver of ['ioredis', 'pg', 'mysql2', 'etcd3', 'node-zookeeper-client']) {
      expect(() => resolve(driver)).toThrow();
    }
  });

  it("compiles docs/backend.md's example and the root + SPI entry points, their declarations checked", () => {
    expect(compiled.libraryErrors).toEqual([]);
    expect(compiled.blocks.flatMap((block) => block.errors)).toEqual([]);
  });

  it("runs docs/backend.md's example", async () => {
    const runs = compiled.blocks.filter((c) => c.block.mode === 'run' && c.block.file === 'docs/backend.md');
    expect(runs.length).toBeGreaterThan(0);
    for (const block of runs) {
      const run = await runBlock(block.js, {});
      expect({ code: run.code, timedOut: run.timedOut, output: run.output }).toMatchObject({
        code: 0,
        timedOut: false,
      });
    }
  });
});
