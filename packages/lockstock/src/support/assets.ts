import { readFileSync } from 'node:fs';

/**
 * Reads a text asset (.sql, .lua, .html) that ships beside the module asking for it; the build copies
 * these files into dist/ next to the compiled modules.
 */
export function readAsset(url: URL): string {
  return readFileSync(url, 'utf8');
}
