import { execFile } from 'node:child_process';
import {
  accessSync,
  constants,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@lockstock/servers';
import { spawnCli, type CliProcess } from '../helpers/cli.js';

const run = promisify(execFile);
const cliPath = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'lockstock-user-'));
  dirs.push(dir);
  return dir;
}

/**
 * Processes running in `dir` or below it, as `pid: command line` — a private redis-server runs in its
 * data dir (it chdirs there, and rewrites its command line to its address, so that cannot tell).
 */
function processesMentioning(dir: string): string[] {
  return readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid) && Number(pid) !== process.pid)
    .flatMap((pid) => {
      try {
        const cwd = readlinkSync(`/proc/${pid}/cwd`);
        if (cwd !== dir && !cwd.startsWith(`${dir}/`)) return [];
        return [`${pid}: ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')}`];
      } catch {
        return []; // exited meanwhile
      }
    });
}

async function exitOf(cli: CliProcess): Promise<{ code: number | null; signal: string | null }> {
  const [code, signal] = (await cli.exited) as [number | null, string | null];
  return { code, signal };
}

async function startServe(
  cwd: string,
  port: number,
): Promise<{ cli: CliProcess; curl: string; address: string }> {
  // As `npm start` runs it: `lockstock serve` with the defaults (one HTTP process per core, beside
  // the primary on a multi-core machine), in the user's directory.
  const cli = spawnCli(['serve'], { PORT: String(port), LOCKSTOCK_PROCESSES: undefined }, { cwd });
  const curl = await cli.waitForLine(/^\s+curl -s -X POST /);
  const address = `http://127.0.0.1:${port}`;
  return { cli, curl: curl.trim(), address };
}

describe("a new user's first hour", () => {
  it('npm start, buy with the printed curl, stop, start again: the sale and order are still there', async () => {
    const cwd = freshDir();
    const port = await freePort();
    const first = await startServe(cwd, port);
    const bought = JSON.parse((await run('sh', ['-c', first.curl])).stdout) as { orderId: string };
    expect(bought).toMatchObject({ status: 'reserved' });
    // A second start on the same data directory says where the running one is and touches nothing.
    const redisServers = processesMentioning(join(cwd, '.lockstock', 'redis'));
    expect(redisServers).toHaveLength(1); // the first serve's private redis-server
    const twice = spawnCli(['serve'], { PORT: String(await freePort()) }, { cwd });
    expect((await exitOf(twice)).code).toBe(1);
    expect(twice.output()).toMatch(
      new RegExp(
        `error: .*\\.lockstock is in use by lockstock serve \\(pid ${first.cli.child.pid}, serving on ${first.address}`,
      ),
    );
    expect(processesMentioning(join(cwd, '.lockstock', 'redis'))).toEqual(redisServers);
    first.cli.kill('SIGTERM');
    expect(await exitOf(first.cli)).toEqual({ code: 0, signal: null });
    expect(processesMentioning(join(cwd, '.lockstock'))).toEqual([]); // its redis-server went with it

    const second = await startServe(cwd, port);
    try {
      // The default keeps its word twice: Redis fsyncs each write, and so does the embedded record.
      const health = (await (await fetch(`${second.address}/healthz`)).json()) as Record<string, unknown>;
      expect(health.durability).toEqual({
        setting: 'fsync',
        redisAppendfsync: 'always',
        honoured: true,
        recordFsync: 'on',
      });
      const sale = (await (await fetch(`${second.address}/api/sales/1`)).json()) as Record<string, unknown>;
      expect(sale).toMatchObject({ id: '1', stock: 100, sold: 1, remaining: 99 }); // kept across the restart
      // The order bought before the restart, seen by the admin whose token the start printed.
      const adminToken = (await second.cli.waitForLine(/^Admin token/)).split(': ')[1]?.trim() as string;
      const order = await fetch(`${second.address}/api/orders/${bought.orderId}`, {
        headers: { authorization: `Bearer ${adminToken}` },
      });
      expect(order.status).toBe(200);
      // The curl printed after a restart buys too (a new demo buyer: the old one has had its unit).
      const rebought = JSON.parse((await run('sh', ['-c', second.curl])).stdout) as { status: string };
      expect(rebought).toMatchObject({ status: 'reserved' });
      // Another user, with a token from the CLI (the same secret, kept in the data dir).
      const other = (
        await run(process.execPath, [cliPath, 'token', '--user', 'second-user'], { cwd })
      ).stdout.trim();
      const again = await fetch(`${second.address}/api/sales/1/orders`, {
        method: 'POST',
        headers: { authorization: `Bearer ${other}`, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(again.status).toBe(202);
      // reconcile asks the running serve (the record is open there), starting no Redis of its own.
      const reconciled = await run(process.execPath, [cliPath, 'reconcile', '--json'], {
        cwd,
        env: { ...process.env, REDIS_URL: '', DATABASE_URL: '', LOG_LEVEL: 'warn' },
      });
      const report = JSON.parse(reconciled.stdout) as { sales: Array<Record<string, unknown>> };
      expect(report.sales).toEqual([expect.objectContaining({ saleId: '1', condition: 'ok', drift: 0 })]);
      expect(processesMentioning(join(cwd, '.lockstock', 'redis'))).toHaveLength(1);
    } finally {
      second.cli.kill('SIGINT');
    }
    expect(await exitOf(second.cli)).toEqual({ code: 0, signal: null });
    expect(processesMentioning(join(cwd, '.lockstock'))).toEqual([]);
  });

  it('reconcile refuses a directory without a store, and owns one nobody serves while it runs', async () => {
    const cwd = freshDir();
    const typo = join(cwd, 'typo');
    const refused = spawnCli(['reconcile', '--data-dir', typo], { REDIS_URL: '', DATABASE_URL: '' }, { cwd });
    expect((await exitOf(refused)).code).toBe(1);
    expect(refused.output()).toMatch(/error: .*typo holds no lockstock store/);
    expect(existsSync(typo)).toBe(false); // nothing created

    // A store whose serve is stopped (and a stale owner file of a process that is gone): reconciled here.
    const port = await freePort();
    const serve = await startServe(cwd, port);
    serve.cli.kill('SIGKILL'); // leaves its owner file behind
    await exitOf(serve.cli);
    for (const line of processesMentioning(join(cwd, '.lockstock', 'redis'))) {
      process.kill(Number(line.split(':')[0]), 'SIGKILL'); // its orphaned redis-server
    }
    expect(existsSync(join(cwd, '.lockstock', 'owner.json'))).toBe(true);
    const report = await run(process.execPath, [cliPath, 'reconcile', '--json'], {
      cwd,
      env: { ...process.env, REDIS_URL: '', DATABASE_URL: '', LOG_LEVEL: 'warn' },
    });
    expect((JSON.parse(report.stdout) as { sales: unknown[] }).sales).toHaveLength(1);
    expect(existsSync(join(cwd, '.lockstock', 'owner.json'))).toBe(false); // released when done
    expect(processesMentioning(join(cwd, '.lockstock'))).toEqual([]);
  });

  it('a command that fails closes what it opened and exits', async () => {
    const cwd = freshDir();
    const deadPort = await freePort(); // nothing listens there
    const serve = spawnCli(
      ['serve', '--database', `postgres://nobody@127.0.0.1:${deadPort}/none`],
      {},
      { cwd },
    );
    expect((await exitOf(serve)).code).toBe(1);
    // One line: which server, which address, what to do — no driver stack traces or retry noise.
    expect(serve.allLines()).toEqual([
      `error: cannot reach PostgreSQL at 127.0.0.1:${deadPort} (ECONNREFUSED): is PostgreSQL running there? ` +
        'Check DATABASE_URL (--database), or leave it unset and lockstock keeps orders in its embedded record',
    ]);
    const noRedis = spawnCli(['serve', '--redis', `redis://127.0.0.1:${deadPort}`], {}, { cwd });
    expect((await exitOf(noRedis)).code).toBe(1);
    expect(noRedis.allLines()).toEqual([
      `error: cannot reach Redis at 127.0.0.1:${deadPort} (ECONNREFUSED): is redis-server running there? ` +
        'Check REDIS_URL (--redis), or leave it unset and lockstock starts a private one',
    ]);
    expect(processesMentioning(join(cwd, '.lockstock'))).toEqual([]); // the redis-server it started is gone

    const lab = spawnCli(
      ['lab', '--strategies', 'redis-lua', '--redis', `redis://127.0.0.1:${deadPort}`],
      {},
      { cwd },
    );
    expect((await exitOf(lab)).code).toBe(1);
  });

  it('the built CLI is executable as it is (npm run build keeps the bit npm set at install)', async () => {
    expect(() => accessSync(cliPath, constants.X_OK)).not.toThrow();
    const { stdout } = await run(cliPath, ['--version']);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
