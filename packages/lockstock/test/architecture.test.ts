import { describe, expect, it } from 'vitest';
import { importsOf, layerViolations, sourceFiles } from './helpers/layers.js';

const src = new URL('../src', import.meta.url);

describe('architecture of the lock library', () => {
  it('lower layers never import upper ones', () => {
    const violations = layerViolations(src, ['support', 'checker', 'redis', 'locks', 'backend']);
    expect(violations).toEqual([]);
  });

  it('imports nothing but ioredis and Node built-ins (a lean package)', () => {
    const foreign = sourceFiles(src).flatMap((file) =>
      importsOf(file)
        .filter((target) => !target.startsWith('.') && !target.startsWith('node:') && target !== 'ioredis')
        .map((target) => `${file} imports ${target}`),
    );
    expect(foreign).toEqual([]);
  });
});
