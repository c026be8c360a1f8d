import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const src = fileURLToPath(new URL('../../src', import.meta.url));

/** The backend contract suite (lockstock/testing): no fault row runs it, so its changes leave the report true. */
const NOT_MEASURED = new Set([join(src, 'testing')]);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (NOT_MEASURED.has(path)) return [];
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

/** A TypeScript file as code alone: its comments and layout do not change what the fault rows measured. */
function codeOf(path: string, text: string): string {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  return ts.createPrinter({ removeComments: true }).printFile(file);
}

/**
 * A digest of the lock library's sources (packages/lockstock/src, every file but the contract suite's:
 * path and content, TypeScript without its comments and layout):
 * docs/faults.json records the one its lock rows were measured on (test/faults-report-setup.ts), and
 * test/docs/faults-report.test.ts compares it with the sources of the day.
 */
export function lockSourcesDigest(): { sha256: string; files: number } {
  const hash = createHash('sha256');
  const all = files(src)
    .map((path) => relative(src, path).split('\\').join('/'))
    .sort();
  for (const path of all) {
    hash.update(`${path}\0`);
    hash.update(
      path.endsWith('.ts')
        ? codeOf(path, readFileSync(join(src, path), 'utf8'))
        : readFileSync(join(src, path)),
    );
    hash.update('\0');
  }
  return { sha256: hash.digest('hex'), files: all.length };
}
