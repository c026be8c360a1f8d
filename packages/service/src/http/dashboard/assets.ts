import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A file the dashboard serves, read once at startup (they are few and small). */
export interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

function asset(path: string): Asset {
  const body = readFileSync(path);
  return {
    body,
    type: TYPES[extname(path)] ?? 'application/octet-stream',
    etag: `"${createHash('sha1').update(body).digest('base64url')}"`,
  };
}

/**
 * The page (index.html), its styles and icons beside this module, and the browser modules compiled
 * into ./browser/ (the build transpiles them; running from src/ there are only .ts files, and the page
 * then has no scripts). Keyed by the file name the page asks for under /dashboard/.
 */
export function loadDashboardAssets(): { page: Asset | undefined; files: Map<string, Asset> } {
  const dir = fileURLToPath(new URL('.', import.meta.url));
  const files = new Map<string, Asset>();
  const pick = (folder: string, extensions: string[]) => {
    if (!existsSync(folder)) return;
    for (const name of readdirSync(folder)) {
      if (extensions.includes(extname(name))) files.set(name, asset(join(folder, name)));
    }
  };
  pick(dir, ['.css', '.svg']);
  pick(join(dir, 'browser'), ['.js']);
  const index = join(dir, 'index.html');
  return { page: existsSync(index) ? asset(index) : undefined, files };
}

/** uPlot, served from its npm package: no CDN (machines may have no internet), no copy in the repo. */
export function loadVendorAssets(): Map<string, Asset> {
  const require = createRequire(import.meta.url);
  return new Map([
    ['uplot.js', asset(require.resolve('uplot/dist/uPlot.iife.min.js'))],
    ['uplot.css', asset(require.resolve('uplot/dist/uPlot.min.css'))],
  ]);
}
