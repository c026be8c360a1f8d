import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Every file under `dir` whose name ends with one of `extensions`. */
function filesEnding(dir: string, extensions: readonly string[]): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const child = join(dir, entry);
    if (statSync(child).isDirectory()) return filesEnding(child, extensions);
    return extensions.some((extension) => child.endsWith(extension)) ? [child] : [];
  });
}

/** Whether `header` names index `n` of `table` (KEYS or ARGV): `KEYS[3]`, or a range `KEYS[1..6]`. */
function namesIndex(header: string, table: string, n: number): boolean {
  for (const match of header.matchAll(new RegExp(`${table}\\[(\\d+)(?:\\.\\.(\\d+))?\\]`, 'g'))) {
    const from = Number(match[1]);
    const to = match[2] === undefined ? from : Number(match[2]);
    if (n >= from && n <= to) return true;
  }
  return false;
}

/**
 * What a Lua file's header lacks. The convention (STYLE.md, after bullmq's commands): the file opens
 * with a `--[[ … ]]` block naming every `KEYS[i]` and `ARGV[i]` the script reads (a range
 * `KEYS[1..6] as in reserve.lua` counts; a script reading ARGV by a computed index names `ARGV`) and
 * what it returns (wrk's request script: what it prints). A fragment — its header starts with
 * "Fragment" or "Included" — reads no KEYS or ARGV of its own: the script including it passes what it
 * needs, and names it.
 */
function luaProblems(text: string): string[] {
  if (!text.startsWith('--[[')) return ['does not open with a --[[ header ]] block'];
  const end = text.indexOf(']]');
  if (end < 0) return ['its --[[ header is never closed'];
  const header = text.slice(0, end);
  // Comments in the code may mention KEYS and ARGV without reading them.
  const body = text
    .slice(end + 2)
    .replace(/--\[\[[\s\S]*?\]\]/g, '')
    .replace(/--.*$/gm, '');
  const fragment = /^--\[\[\s*(Fragment|Included)/.test(text);
  const problems: string[] = [];
  for (const table of ['KEYS', 'ARGV']) {
    const indexes = [...body.matchAll(new RegExp(`\\b${table}\\[(\\d+)\\]`, 'g'))].map((m) => Number(m[1]));
    const computed = new RegExp(`#${table}\\b|\\b${table}\\b(?!\\[\\d)`).test(body);
    if (fragment) {
      if (indexes.length > 0 || computed) problems.push(`is a fragment but reads ${table} itself`);
      continue;
    }
    for (const n of [...new Set(indexes)].sort((a, b) => a - b)) {
      if (!namesIndex(header, table, n))
        problems.push(`reads ${table}[${n}], which its header does not name`);
    }
    if (computed && !new RegExp(`\\b${table}\\b`).test(header)) {
      problems.push(`reads ${table} by a computed index, and its header does not name ${table}`);
    }
  }
  // Case aside: the library's election-leader.lua says "returns" (its sources are pinned by a digest).
  if (!fragment && !/\b(returns|prints)\b/i.test(header))
    problems.push('its header does not say what it returns');
  return problems;
}

/**
 * What an SQL file's header lacks. The convention: the file opens with `--` lines naming each
 * parameter — `$1 sale id, $2 …` (PostgreSQL, and the lab's MySQL files, numbered the same way), or
 * `? 1 server name, 2 owner` (the library's MySQL statements), and each `{{slot}}` filled in by the
 * caller — and, for a statement that reads or writes rows (SELECT, WITH, INSERT, UPDATE, DELETE),
 * what it returns (`Returns nothing.` when the caller reads no result). Schema statements (CREATE,
 * ALTER, KILL, the migrations) return nothing and say only what they do.
 */
function sqlProblems(text: string): string[] {
  if (!text.startsWith('--')) return ['does not open with a -- header'];
  const lines = text.split('\n');
  const firstCode = lines.findIndex((line) => line.trim() !== '' && !line.startsWith('--'));
  const header = lines.slice(0, firstCode < 0 ? lines.length : firstCode).join('\n');
  const body = lines
    .slice(firstCode < 0 ? lines.length : firstCode)
    .map((line) => line.replace(/--.*$/, ''))
    .join('\n');
  const problems: string[] = [];
  const parameters = [...new Set([...body.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))].sort(
    (a, b) => a - b,
  );
  for (const n of parameters) {
    if (!new RegExp(`\\$${n}(?!\\d)`).test(header))
      problems.push(`uses $${n}, which its header does not name`);
  }
  const placeholders = body.split('?').length - 1;
  for (let n = 1; n <= placeholders; n++) {
    if (!new RegExp(`\\?[^\\n]*\\b${n}\\s+\\S`).test(header)) {
      problems.push(`has ${placeholders} ? placeholders; its header names no "${n} …" after a ?`);
    }
  }
  for (const slot of new Set([...body.matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1]!))) {
    if (!header.includes(`{{${slot}}}`))
      problems.push(`fills in {{${slot}}}, which its header does not name`);
  }
  const statement = /^\s*(\w+)/.exec(body)?.[1]?.toUpperCase() ?? '';
  if (['SELECT', 'WITH', 'INSERT', 'UPDATE', 'DELETE'].includes(statement) && !/\bReturns\b/.test(header)) {
    problems.push(`has a header that does not say what its ${statement} returns`);
  }
  return problems;
}

/**
 * The .lua and .sql files under `srcUrl` whose header comment does not follow the convention (see
 * luaProblems and sqlProblems), one entry per problem, paths relative to `srcUrl`.
 */
export function assetHeaderProblems(srcUrl: URL): string[] {
  const src = fileURLToPath(srcUrl);
  return filesEnding(src, ['.lua', '.sql']).flatMap((file) => {
    const text = readFileSync(file, 'utf8');
    const problems = file.endsWith('.lua') ? luaProblems(text) : sqlProblems(text);
    return problems.map((problem) => `${relative(src, file)} ${problem}`);
  });
}
