import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = fileURLToPath(new URL('../src', import.meta.url));

/**
 * Layers from ARCHITECTURE.md, lowest first. A module may import from its own layer and the layers
 * below it, never from above.
 */
const LAYERS = ['support', 'servers', 'redis', 'locks', 'sale', 'lab', 'http', 'bench', 'cli'];

function layerOf(file: string): string {
  const top = relative(src, file).split('/')[0] ?? '';
  return top.endsWith('.ts') ? 'root' : top;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

describe('architecture', () => {
  it('lower layers never import upper ones', () => {
    const violations: string[] = [];
    for (const file of sourceFiles(src)) {
      const from = layerOf(file);
      if (from === 'root') continue; // src/index.ts re-exports the public API
      expect(LAYERS, `unknown layer of ${file}`).toContain(from);
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
        const target = resolve(dirname(file), match[1]!);
        const to = layerOf(target);
        if (to !== 'root' && LAYERS.indexOf(to) > LAYERS.indexOf(from)) {
          violations.push(`${relative(src, file)} imports ${match[1]} (${from} → ${to})`);
        }
        if (to === 'root') violations.push(`${relative(src, file)} imports the package root`);
      }
    }
    expect(violations).toEqual([]);
  });
});
