import { describe, expect, it } from 'vitest';
import { assetHeaderProblems } from '../../lockstock/test/helpers/asset-headers.js';
import { importCycles } from '../../lockstock/test/helpers/cycles.js';
import { importsOf, sourceFiles } from '../../lockstock/test/helpers/layers.js';

const src = new URL('../src', import.meta.url);

describe('architecture of the test servers', () => {
  it('imports nothing but ioredis and Node built-ins (never the lock library)', () => {
    const foreign = sourceFiles(src).flatMap((file) =>
      importsOf(file)
        .filter((target) => !target.startsWith('./') && !target.startsWith('node:') && target !== 'ioredis')
        .map((target) => `${file} imports ${target}`),
    );
    expect(foreign).toEqual([]);
  });

  it('has no import circles, type-only imports included', () => {
    expect(importCycles(src)).toEqual([]);
  });

  it('opens every Lua and SQL file with a header naming its KEYS/ARGV or parameters and what it returns', () => {
    // The scripts and statements are read apart from the TypeScript that runs them: the header is
    // their signature (helpers/asset-headers.ts has the convention).
    expect(assetHeaderProblems(src)).toEqual([]);
  });
});
