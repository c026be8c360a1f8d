import { readFileSync } from 'node:fs';

/**
 * Reads a text asset (.sql, .lua, .html) that ships beside the module asking for it; the build copies
 * these files into dist/ next to the compiled modules.
 */
export function readAsset(url: URL): string {
  return readFileSync(url, 'utf8');
}

/**
 * The reader of the .sql files of one folder: `sqlIn(new URL('./sql/', import.meta.url))('get-sale')`
 * reads `./sql/get-sale.sql`. Each queries module loads its statements with it, once, when it is
 * imported (the headers of the files say what each one takes and returns).
 */
export function sqlIn(dir: URL): (name: string) => string {
  return (name) => readAsset(new URL(`${name}.sql`, dir));
}
