// Builds one workspace package: `node scripts/build.mjs <package dir>`.
// 1. removes dist/ so files deleted from src/ never linger in the build;
// 2. compiles with tsc -p tsconfig.build.json;
// 3. copies the non-TypeScript assets (.lua, .sql, .html, .css, .js vendored for the browser) from
//    src/ into dist/, keeping their paths: modules load them with `new URL('./x.lua', import.meta.url)`;
// 4. makes the package's bin files executable: tsc recreates them without the bit npm set at install.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, relative, resolve } from 'node:path';

const pkgDir = resolve(process.argv[2] ?? '.');
const src = join(pkgDir, 'src');
const dist = join(pkgDir, 'dist');
const assetExtensions = new Set(['.lua', '.sql', '.html', '.css', '.svg']);

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(pkgDir, 'tsconfig.build.json')], { stdio: 'inherit' });

function walk(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path);
    else if (assetExtensions.has(extname(entry)) || path.includes(`${join('assets', 'vendor')}`)) {
      const target = join(dist, relative(src, path));
      mkdirSync(dirname(target), { recursive: true });
      cpSync(path, target);
    }
  }
}
walk(src);

const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
const bins = typeof manifest.bin === 'string' ? [manifest.bin] : Object.values(manifest.bin ?? {});
for (const bin of bins) {
  const file = join(pkgDir, bin);
  if (!existsSync(file)) throw new Error(`bin ${bin} was not built`);
  chmodSync(file, 0o755);
}
