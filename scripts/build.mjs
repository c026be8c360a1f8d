// Builds one workspace package: `node scripts/build.mjs <package dir>`.
// 1. removes dist/ so files deleted from src/ never linger in the build;
// 2. compiles with tsc -p tsconfig.build.json;
// 3. browser code: TypeScript under a `browser/` folder of src/ runs in the browser, not in Node. The
//    package's tsconfig excludes it; `tsconfig.browser.json` (if present) type-checks it with the DOM
//    library, and each file is transpiled on its own to an ES module beside the others in dist/. No
//    bundler: the page loads the modules as they are;
// 4. copies the non-TypeScript assets (.lua, .sql, .html, .css, .svg, .js vendored for the browser)
//    from src/ into dist/, keeping their paths: modules load them with `new URL('./x.lua', import.meta.url)`;
// 5. makes the package's bin files executable: tsc recreates them without the bit npm set at install.
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
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, relative, resolve, sep } from 'node:path';

const pkgDir = resolve(process.argv[2] ?? '.');
const src = join(pkgDir, 'src');
const dist = join(pkgDir, 'dist');
const assetExtensions = new Set(['.lua', '.sql', '.html', '.css', '.svg']);

rmSync(dist, { recursive: true, force: true });
const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(pkgDir, 'tsconfig.build.json')], { stdio: 'inherit' });
const browserConfig = join(pkgDir, 'tsconfig.browser.json');
if (existsSync(browserConfig))
  execFileSync(process.execPath, [tsc, '-p', browserConfig], { stdio: 'inherit' });
const ts = require('typescript');

const isBrowserModule = (path) => path.endsWith('.ts') && relative(src, path).split(sep).includes('browser');

function transpileForBrowser(path) {
  const { outputText } = ts.transpileModule(readFileSync(path, 'utf8'), {
    fileName: path,
    compilerOptions: {
      module: ts.ModuleKind.ES2022,
      target: ts.ScriptTarget.ES2022,
      verbatimModuleSyntax: true, // `import type` disappears, every other import stays as written
    },
  });
  const target = join(dist, relative(src, path)).replace(/\.ts$/, '.js');
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, outputText);
}

function walk(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path);
    else if (isBrowserModule(path)) transpileForBrowser(path);
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
