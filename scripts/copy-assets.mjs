// Copies the non-TypeScript assets (.lua scripts, .sql migrations) from src/ into dist/,
// keeping their relative paths: modules load them with `new URL('./x.lua', import.meta.url)`.
import { cpSync, readdirSync, statSync, mkdirSync } from 'node:fs';
import { join, dirname, extname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');
const dist = join(root, 'dist');
const assetExtensions = new Set(['.lua', '.sql', '.html', '.css']);

function walk(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path);
    else if (assetExtensions.has(extname(entry))) {
      const target = join(dist, relative(src, path));
      mkdirSync(dirname(target), { recursive: true });
      cpSync(path, target);
    }
  }
}
walk(src);
