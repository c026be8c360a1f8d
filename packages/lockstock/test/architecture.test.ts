import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { assetHeaderProblems } from './helpers/asset-headers.js';
import { importCycles } from './helpers/cycles.js';
import { importsOf, layerViolations, sourceFiles } from './helpers/layers.js';

const src = new URL('../src', import.meta.url);
const srcDir = fileURLToPath(src);

/**
 * The built-in backends' folders. Each may import its own files, the shared utilities of support/,
 * the published SPI (backend/index.ts, `lockstock/backend`) and names of the public root API
 * (index.ts, `lockstock`) — nothing else of the core: what they need, a third party's backend can have.
 */
const BACKEND_FOLDERS = ['redis', 'local', 'etcd', 'zookeeper', 'postgres', 'mysql'];

/** Each import statement of `file`: the names it imports and where from. */
function namedImports(file: string): Array<{ names: string[]; from: string }> {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:import|export)\s+(?:type\s+)?\{([^}]*)\}\s*from\s*'([^']+)'/g)].map((m) => ({
    names: m[1]!
      .split(',')
      .map(
        (name) =>
          name
            .trim()
            .replace(/^type\s+/, '')
            .split(/\s+as\s+/)[0]!,
      )
      .filter(Boolean),
    from: m[2]!,
  }));
}

/** What the package root exports (the public root API), by name. */
function rootExports(): Set<string> {
  return new Set(namedImports(join(srcDir, 'index.ts')).flatMap((statement) => statement.names));
}

/** Imports of the backend folders that go around the SPI and the root API. */
function spiViolations(): string[] {
  const root = rootExports();
  const spi = join(srcDir, 'backend', 'index.ts');
  const violations: string[] = [];
  for (const folder of BACKEND_FOLDERS) {
    const own = join(srcDir, folder);
    for (const file of sourceFiles(own)) {
      const where = relative(srcDir, file);
      for (const specifier of importsOf(file).filter((s) => s.startsWith('.'))) {
        const target = resolve(dirname(file), specifier).replace(/\.js$/, '.ts');
        const inside = relative(srcDir, target);
        if (target.startsWith(own + '/') || target === spi || inside.startsWith('support/')) continue;
        if (!inside.startsWith('locks/') || inside.startsWith('locks/core/')) {
          violations.push(`${where} imports ${specifier}: not the SPI (../backend/index.js)`);
          continue;
        }
        // Elsewhere in locks/: only what the root exports (its errors, types, fenced stores).
        const statements = namedImports(file).filter((statement) => statement.from === specifier);
        const hidden = statements.flatMap((statement) => statement.names).filter((name) => !root.has(name));
        if (statements.length === 0) violations.push(`${where} imports ${specifier} whole`);
        for (const name of hidden) {
          violations.push(`${where} imports ${name} from ${specifier}: neither the SPI nor the root API`);
        }
      }
    }
  }
  return violations;
}

describe('architecture of the lock library', () => {
  it('lower layers never import upper ones', () => {
    const violations = layerViolations(src, [
      'support',
      'checker',
      'locks',
      'backend',
      'redis',
      'local',
      'etcd',
      'zookeeper',
      'postgres',
      'mysql',
      'otel',
      'testing',
    ]);
    expect(violations).toEqual([]);
  });

  it("imports only Node built-ins and each backend's own driver, in that backend's directory (lean)", () => {
    // A team using one backend installs only its driver: no module outside a backend's directory
    // (and the Redis plumbing) may load another backend's driver.
    const DRIVERS: Record<string, string> = {
      ioredis: '/redis/',
      etcd3: '/etcd/',
      'node-zookeeper-client': '/zookeeper/',
      // The driver's wire records, which zookeeper/containers.ts teaches the create2 result.
      'node-zookeeper-client/lib/jute/index.js': '/zookeeper/',
      // fencing/postgres-fenced-store.ts and redis/redlock/token-source.ts take a Queryable by shape instead.
      pg: '/postgres/',
      'mysql2/promise': '/mysql/',
      // lockstock/otel: the OpenTelemetry API (an optional peer), for those who import that subpath.
      '@opentelemetry/api': '/otel/',
    };
    const foreign = sourceFiles(src).flatMap((file) =>
      importsOf(file)
        .filter((target) => !target.startsWith('.') && !target.startsWith('node:'))
        .filter((target) => !(DRIVERS[target] !== undefined && file.includes(DRIVERS[target])))
        .map((target) => `${file} imports ${target}`),
    );
    expect(foreign).toEqual([]);
  });

  it('built-in backends use the core only through the published SPI and the public root API', () => {
    expect(spiViolations()).toEqual([]);
  });

  it('has no import circles, type-only imports included', () => {
    // A circle ties its modules together: none can be read, moved or tested alone, and a value
    // import along one can see a half-initialised module. Each entry is one circle, as a path.
    expect(importCycles(src)).toEqual([]);
  });

  it('opens every Lua and SQL file with a header naming its KEYS/ARGV or parameters and what it returns', () => {
    // The scripts and statements are read apart from the TypeScript that runs them: the header is
    // their signature (helpers/asset-headers.ts has the convention).
    expect(assetHeaderProblems(src)).toEqual([]);
  });
});
