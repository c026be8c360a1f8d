import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export function sourceFiles(dir: URL | string): string[] {
  const path = typeof dir === 'string' ? dir : fileURLToPath(dir);
  return readdirSync(path).flatMap((entry) => {
    const child = join(path, entry);
    if (statSync(child).isDirectory()) return sourceFiles(child);
    return child.endsWith('.ts') ? [child] : [];
  });
}

/** The module specifiers a file imports or re-exports (static and dynamic). */
export function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from|import\()\s*'([^']+)'/g)].map((m) => m[1]!);
}

/**
 * Checks the layer rule of ARCHITECTURE.md: `layers` lowest first; a module imports its own layer and
 * those below it, never above; files at the top of `src` (the public entry points) import anything
 * but are imported by nothing.
 */
export function layerViolations(srcUrl: URL, layers: readonly string[]): string[] {
  const src = fileURLToPath(srcUrl);
  const layerOf = (file: string) => {
    const top = relative(src, file).split('/')[0] ?? '';
    return top.endsWith('.ts') || top.endsWith('.js') ? 'root' : top;
  };
  const violations: string[] = [];
  for (const file of sourceFiles(src)) {
    const from = layerOf(file);
    if (from === 'root') continue;
    if (!layers.includes(from)) violations.push(`${relative(src, file)}: unknown layer ${from}`);
    for (const specifier of importsOf(file).filter((s) => s.startsWith('.'))) {
      const target = resolve(dirname(file), specifier);
      if (relative(src, target).startsWith('..')) {
        violations.push(`${relative(src, file)} imports ${specifier}, outside its package`);
        continue;
      }
      const to = layerOf(target);
      if (to === 'root') violations.push(`${relative(src, file)} imports the package root`);
      else if (layers.indexOf(to) > layers.indexOf(from)) {
        violations.push(`${relative(src, file)} imports ${specifier} (${from} → ${to})`);
      }
    }
  }
  return violations;
}
