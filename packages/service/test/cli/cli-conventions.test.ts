import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { httpConfigFromEnv } from '../../src/http/config.js';

const cliPath = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lockstock-cli-'));
  dirs.push(dir);
  return dir;
}

/** Runs the built CLI in `cwd`; resolves with its exit code and output (never rejects on a code). */
function cli(
  args: string[],
  cwd: string,
  env: Record<string, string | undefined> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cliPath, ...args],
      {
        cwd,
        env: Object.fromEntries(
          Object.entries({
            ...process.env,
            LOG_LEVEL: 'warn',
            LOCKSTOCK_JWT_SECRET: undefined,
            ...env,
          }).filter(([, value]) => value !== undefined),
        ),
        timeout: 120_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('token signs only with a secret a serve would accept', () => {
  it('refuses a data directory that does not exist, creating nothing', async () => {
    const cwd = freshDir();
    const typo = join(cwd, '.lockstok');
    const { code, stdout, stderr } = await cli(['token', '--user', 'u1', '--data-dir', typo], cwd);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      `error: ${typo} does not exist: pass the --data-dir of a lockstock serve (default .lockstock, where you ran it), or set LOCKSTOCK_JWT_SECRET\n`,
    );
    expect(existsSync(typo)).toBe(false);
    // The default data directory too, where no serve ever ran.
    const none = await cli(['token', '--user', 'u1'], cwd);
    expect(none.code).toBe(1);
    expect(existsSync(join(cwd, '.lockstock'))).toBe(false);
  });

  it('refuses a directory without a serve secret, and signs with the secret serve kept there', async () => {
    const cwd = freshDir();
    const dir = join(cwd, 'data');
    mkdirSync(dir);
    const refused = await cli(['token', '--user', 'u1', '--data-dir', dir], cwd);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/holds no jwt-secret: start lockstock serve with this --data-dir first/);
    expect(existsSync(join(dir, 'jwt-secret'))).toBe(false);
    writeFileSync(join(dir, 'jwt-secret'), 'a-secret-serve-generated-and-kept-here');
    const signed = await cli(['token', '--user', 'u1', '--data-dir', dir], cwd);
    expect(signed.code).toBe(0);
    expect(signed.stdout.trim()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  });

  it('refuses a secret serve refuses as too short, with serve’s words', async () => {
    const cwd = freshDir();
    const short = 'too-short';
    const serveSays = (() => {
      try {
        httpConfigFromEnv({}, short);
      } catch (error) {
        return (error as Error).message;
      }
      return 'serve accepted it';
    })();
    const { code, stderr } = await cli(['token', '--user', 'u1'], cwd, { LOCKSTOCK_JWT_SECRET: short });
    expect(code).toBe(1);
    expect(stderr).toBe(`error: ${serveSays}\n`);
    const ok = await cli(['token', '--user', 'u1'], cwd, { LOCKSTOCK_JWT_SECRET: 'sixteen-chars-ok' });
    expect(ok.code).toBe(0);
  });
});

describe('what the commands say and how they report', () => {
  it('reconcile --help says what its exit status means', async () => {
    const { stdout } = await cli(['reconcile', '--help'], freshDir());
    expect(stdout).toMatch(/Exits 2 on drift/);
    expect(stdout).toMatch(/Exit status: 0 when every open sale is in sync .*, 2 when drift was\s+found/);
  });

  it('--json [file] means the same in every command: a file, or stdout without one', async () => {
    for (const command of [['reconcile'], ['lab'], ['bench', 'locks'], ['bench', 'sale']]) {
      const { stdout } = await cli([...command, '--help'], freshDir());
      expect(stdout, command.join(' ')).toMatch(/--json \[file\]\s+the report as JSON: written to file/);
    }
    const cwd = freshDir();
    const lab = ['lab', '--strategies', 'redis-lua', '--runs', '1', '--stock', '5', '--buyers', '10'];
    const small = [...lab, '--processes', '1', '--concurrency', '2'];
    // To stdout, instead of the table: parseable as it is.
    for (const json of [['--json'], ['--json', '-']]) {
      const { code, stdout } = await cli([...small, ...json], cwd);
      expect(code).toBe(0);
      expect(JSON.parse(stdout)).toMatchObject({
        runs: [expect.objectContaining({ strategy: 'redis-lua' })],
      });
    }
    // To a file (as before): the table on stdout, the JSON in the file.
    const { code, stdout } = await cli([...small, '--json', 'runs.json'], cwd);
    expect(code).toBe(0);
    expect(stdout).toMatch(/redis-lua/);
    expect(JSON.parse(readFileSync(join(cwd, 'runs.json'), 'utf8'))).toHaveProperty('runs');
  });
});

describe('a URL for another kind of server', () => {
  it('is named by its scheme, before anything starts, for DATABASE_URL and REDIS_URL alike', async () => {
    const cwd = freshDir();
    // What a user with a MySQL shop at hand tries first: reported as an unreachable PostgreSQL before.
    const mysql = await cli(['serve', '--port', '0'], cwd, {
      DATABASE_URL: 'mysql://shop:secret@127.0.0.1:3306/shop',
      LOCKSTOCK_PROCESSES: '1',
    });
    expect(mysql.code).toBe(1);
    expect(`${mysql.stdout}${mysql.stderr}`).toBe(
      'error: DATABASE_URL (--database) is a mysql:// URL, but lockstock needs PostgreSQL there: give a ' +
        'postgres:// or postgresql:// URL, or leave it unset and lockstock keeps orders in its embedded record\n',
    );
    const http = await cli(['serve', '--port', '0', '--redis', 'http://127.0.0.1:6379'], cwd, {
      LOCKSTOCK_PROCESSES: '1',
    });
    expect(http.code).toBe(1);
    expect(`${http.stdout}${http.stderr}`).toBe(
      'error: REDIS_URL (--redis) is an http:// URL, but lockstock needs Redis there: give a redis://, ' +
        'rediss:// or redis-cluster:// URL, or leave it unset and lockstock starts a private redis-server\n',
    );
    const worker = await cli(['worker'], cwd, {
      REDIS_URL: 'redis://127.0.0.1:1',
      DATABASE_URL: 'mariadb://127.0.0.1/shop',
    });
    expect(worker.code).toBe(1);
    expect(worker.stderr).toMatch(/^error: DATABASE_URL \(--database\) is a mariadb:\/\/ URL/);
    expect(existsSync(join(cwd, '.lockstock', 'redis'))).toBe(false); // no redis-server was started
  });
});
