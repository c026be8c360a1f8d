import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assetHeaderProblems } from '../../lockstock/test/helpers/asset-headers.js';
import { importCycles } from '../../lockstock/test/helpers/cycles.js';
import { importsOf, layerViolations, sourceFiles } from '../../lockstock/test/helpers/layers.js';

const src = new URL('../src', import.meta.url);
/** The lock library's public entry points: every subpath its package.json exports. */
const libraryExports = new Set(
  Object.keys(
    (
      JSON.parse(readFileSync(new URL('../../lockstock/package.json', import.meta.url), 'utf8')) as {
        exports: Record<string, unknown>;
      }
    ).exports,
  ).map((subpath) => (subpath === '.' ? 'lockstock' : `lockstock${subpath.slice(1)}`)),
);

describe('architecture of the service', () => {
  it('lower layers never import upper ones', () => {
    expect(layerViolations(src, ['support', 'sale', 'lab', 'http', 'bench', 'cli'])).toEqual([]);
  });

  it('uses the lock library only through its public exports', () => {
    const reaching = sourceFiles(src).flatMap((file) =>
      importsOf(file)
        .filter((target) => target.startsWith('lockstock') && !libraryExports.has(target))
        .map((target) => `${file} imports ${target}`),
    );
    expect(reaching).toEqual([]);
  });

  it('has no import circles, type-only imports included', () => {
    // As in the library (its architecture.test.ts): a circle, even of types, ties its modules
    // together, so none can be read, moved or tested alone. Each entry is one circle, as a path.
    expect(importCycles(src)).toEqual([]);
  });

  it('opens every Lua and SQL file with a header naming its KEYS/ARGV or parameters and what it returns', () => {
    // The scripts and statements are read apart from the TypeScript that runs them: the header is
    // their signature (helpers/asset-headers.ts has the convention).
    expect(assetHeaderProblems(src)).toEqual([]);
  });
});
