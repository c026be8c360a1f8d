import { execFile } from 'node:child_process';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

/**
 * README code blocks as tests. Every ```ts block of a README is type-checked with `tsc --strict` and
 * run against real servers, unless an HTML comment right before it (blank lines allowed) says
 * otherwise — invisible on GitHub and npm:
 *
 *   <!-- readme-test: typecheck-only -->          compiled, not run (a fragment of a larger program)
 *   <!-- readme-test: expect-fail TODO: ... -->    must fail to compile or to run, until the API it
 *                                                  shows exists; the TODO says what is missing
 *   <!-- readme-test prelude                       declarations compiled before the block (its reader
 *   declare const pool: import('pg').Pool;         has them in their own code); not shown
 *   -->
 *
 * A block that is run gets `REDIS_URL` (and `DATABASE_URL`, `MYSQL_URL`, `ETCD_URL`, `ZOOKEEPER_CONNECT`) of private servers in its environment,
 * must read them, and must exit by itself with code 0: no `process.exit`, so a forgotten `close()`
 * shows up as a hang.
 */

export type BlockMode = 'run' | 'typecheck-only' | 'expect-fail';

export interface ReadmeBlock {
  /** The README, as given to `readmeBlocks`. */
  readonly file: string;
  /** 1-based line of the block's first code line in the README. */
  readonly line: number;
  readonly code: string;
  readonly prelude: string;
  readonly mode: BlockMode;
  /** For `expect-fail`: what the block is waiting for. */
  readonly todo?: string;
}

const DIRECTIVE = /^<!--\s*readme-test:\s*(typecheck-only|expect-fail)\b\s*(.*?)\s*-->$/;
const PRELUDE_START = /^<!--\s*readme-test\s+prelude\s*$/;
const FENCE = /^```(\w*)\s*$/;

/** The TypeScript blocks of a Markdown text, with the directives before them applied. */
export function readmeBlocks(markdown: string, file: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const blocks: ReadmeBlock[] = [];
  let pending: { mode?: BlockMode; todo?: string; prelude?: string; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const directive = DIRECTIVE.exec(line.trim());
    if (directive) {
      pending = { ...pending, line: i + 1, mode: directive[1] as BlockMode };
      if (directive[1] === 'expect-fail') {
        if (!directive[2])
          throw new Error(`${file}:${i + 1}: expect-fail needs a TODO saying what is missing`);
        pending.todo = directive[2];
      }
      continue;
    }
    if (PRELUDE_START.test(line.trim())) {
      const end = lines.findIndex((l, j) => j > i && l.trim() === '-->');
      if (end < 0) throw new Error(`${file}:${i + 1}: unterminated readme-test prelude`);
      pending = { ...pending, line: i + 1, prelude: lines.slice(i + 1, end).join('\n') };
      i = end;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const close = lines.findIndex((l, j) => j > i && l.trim() === '```');
      if (close < 0) throw new Error(`${file}:${i + 1}: unterminated code block`);
      if (fence[1] === 'ts' || fence[1] === 'typescript') {
        blocks.push({
          file,
          line: i + 2,
          code: lines.slice(i + 1, close).join('\n'),
          prelude: pending?.prelude ?? '',
          mode: pending?.mode ?? 'run',
          ...(pending?.todo ? { todo: pending.todo } : {}),
        });
      } else if (pending) {
        throw new Error(
          `${file}:${pending.line}: a readme-test directive before a ${fence[1] || 'plain'} block`,
        );
      }
      pending = undefined;
      i = close;
      continue;
    }
    if (pending && line.trim() !== '') {
      throw new Error(`${file}:${pending.line}: a readme-test directive must come right before a ts block`);
    }
  }
  if (pending) throw new Error(`${file}:${pending.line}: a readme-test directive with no ts block after it`);
  return blocks;
}

/**
 * How a README's reader compiles: strict, ESM on Node 20, `await using`. Library typings are not
 * checked wholesale (all of @types/node takes seconds); `compileBlocks` checks the blocks and the
 * declarations of the library under test.
 */
export const README_COMPILER_OPTIONS: ts.CompilerOptions = {
  strict: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ['lib.es2023.d.ts', 'lib.esnext.disposable.d.ts'],
  types: ['node'],
  noEmitOnError: false,
};

export interface CompiledBlock {
  readonly block: ReadmeBlock;
  /** `README.md:42: TS2304: Cannot find name 'x'.` — empty when it type-checks. */
  readonly errors: string[];
  /** The emitted module, to run with node. */
  readonly js: string;
}

export interface CompileOptions {
  /**
   * Directories whose `.d.ts` files are type-checked too, as `tsc` with `skipLibCheck: false` would:
   * the library under test, so that its published typings are checked against the ioredis and
   * @types/node the reader has.
   */
  readonly declarations?: readonly string[];
  readonly compilerOptions?: ts.CompilerOptions;
}

export interface Compiled {
  readonly blocks: CompiledBlock[];
  /** Errors in the checked declarations and global ones (a missing @types/node). */
  readonly libraryErrors: string[];
}

/**
 * Writes each block as a module of its own (prelude first) into `dir` — which must resolve
 * `lockstock` and the block's other imports from a `node_modules` in or above it — and compiles them
 * all in one TypeScript program. Errors in blocks point at README lines.
 */
export function compileBlocks(
  blocks: readonly ReadmeBlock[],
  dir: string,
  options: CompileOptions = {},
): Compiled {
  mkdirSync(join(dir, 'out'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "private": true, "type": "module" }\n');
  const files = blocks.map((block, i) => {
    const path = join(dir, `block-${i + 1}.ts`);
    // `export {}`: a block without imports is still a module (top-level await).
    writeFileSync(path, `${block.prelude}\n${block.code}\nexport {};\n`);
    return path;
  });
  const program = ts.createProgram(files, {
    ...README_COMPILER_OPTIONS,
    ...options.compilerOptions,
    outDir: join(dir, 'out'),
  });
  program.emit();
  const declarationDirs = (options.declarations ?? []).map((d) => `${realpathSync(d)}/`);
  const declarationFiles = program
    .getSourceFiles()
    .filter((sf) => sf.isDeclarationFile && declarationDirs.some((d) => sf.fileName.startsWith(d)));
  if (declarationDirs.length > 0 && declarationFiles.length === 0) {
    throw new Error(`no declarations of ${options.declarations?.join(', ')} in the program: not imported?`);
  }
  const diagnosticsOf = (sf: ts.SourceFile) => [
    ...program.getSyntacticDiagnostics(sf),
    ...program.getSemanticDiagnostics(sf),
  ];
  const format = (d: ts.Diagnostic) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (!d.file || d.start === undefined) return `TS${d.code}: ${text}`;
    return `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: TS${d.code}: ${text}`;
  };
  return {
    blocks: blocks.map((block, i) => {
      const preludeLines = block.prelude.split('\n').length;
      const sourceFile = program.getSourceFile(files[i] as string) as ts.SourceFile;
      const errors = diagnosticsOf(sourceFile).map((d) => {
        const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
        const at = sourceFile.getLineAndCharacterOfPosition(d.start ?? 0).line - preludeLines;
        const where = at < 0 ? `${block.file}:${block.line} (prelude)` : `${block.file}:${block.line + at}`;
        return `${where}: TS${d.code}: ${text}`;
      });
      return { block, errors, js: join(dir, 'out', `block-${i + 1}.js`) };
    }),
    libraryErrors: [
      ...program.getOptionsDiagnostics(),
      ...program.getGlobalDiagnostics(),
      ...declarationFiles.flatMap(diagnosticsOf),
    ].map(format),
  };
}

export interface BlockRun {
  readonly code: number | null;
  /** Killed after `timeoutMs`: the block did not exit by itself. */
  readonly timedOut: boolean;
  readonly output: string;
}

/** Runs an emitted block with node; it must end by itself within `timeoutMs`. */
export function runBlock(js: string, env: Record<string, string>, timeoutMs = 20_000): Promise<BlockRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [js],
      { env: { ...process.env, ...env }, timeout: timeoutMs, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        const killed = error !== null && 'killed' in error && error.killed === true;
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, timedOut: killed, output: `${stdout}${stderr}` });
      },
    );
  });
}

/** Where a block talks to a server, it must take the address from the environment. */
export function serversOf(block: ReadmeBlock): {
  redis: boolean;
  postgres: boolean;
  mysql: boolean;
  etcd: boolean;
  zookeeper: boolean;
} {
  const code = `${block.prelude}\n${block.code}`;
  return {
    redis: /new (RedisLockClient|Redis|Cluster)\b/.test(code),
    postgres: /from 'pg'/.test(code),
    mysql: /new MySqlLockClient\b/.test(code),
    etcd: /new (EtcdLockClient|Etcd3)\b/.test(code),
    zookeeper: /new ZooKeeperLockClient\b/.test(code),
  };
}
