import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MariaDbServer, mysqlGreets, whichExecutable } from '../src/index.js';

const run = promisify(execFile);
const client = whichExecutable('mariadb') ?? '/usr/bin/mariadb';

/** One statement through Debian's `mariadb` client (no client library in this package). */
async function sql(server: MariaDbServer, statement: string): Promise<string> {
  const { stdout } = await run(
    client,
    [
      '--no-defaults',
      '-u',
      server.user,
      '-h',
      server.host,
      '-P',
      String(server.port),
      '-N',
      '-B',
      '-e',
      statement,
    ],
    { timeout: 30_000 },
  );
  return stdout.trim();
}

describe('MariaDbServer', () => {
  let server: MariaDbServer;
  beforeAll(async () => {
    server = await MariaDbServer.start();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('serves root without a password on its loopback port, with the lockstock database', async () => {
    expect(server.url).toBe(`mysql://root@127.0.0.1:${server.port}/lockstock`);
    expect(server.connectionOptions).toEqual({
      host: '127.0.0.1',
      port: server.port,
      user: 'root',
      database: 'lockstock',
    });
    expect(await sql(server, 'SELECT @@port, @@bind_address')).toBe(`${server.port}\t127.0.0.1`);
    expect(await sql(server, "SHOW DATABASES LIKE 'lockstock'")).toBe('lockstock');
    // Everything of the server's is in its temp dir: the data, the socket, the temp files.
    expect(await sql(server, 'SELECT @@datadir, @@socket, @@tmpdir')).toBe(
      `${server.dir}/data/\t${server.dir}/mysqld.sock\t${server.dir}`,
    );
  });

  it('GET_LOCK belongs to the session that took it', async () => {
    // Two `mariadb` processes are two sessions: the second cannot take what the first holds.
    const holder = run(client, [
      '--no-defaults', '-uroot', '-h127.0.0.1', `-P${server.port}`, '-N', '-B',
      '-e', "SELECT GET_LOCK('servers-test', 5); SELECT SLEEP(1); SELECT RELEASE_LOCK('servers-test')",
    ]); // prettier-ignore
    await expect
      .poll(() => sql(server, "SELECT IS_USED_LOCK('servers-test') IS NOT NULL"), { timeout: 20_000 })
      .toBe('1');
    expect(await sql(server, "SELECT GET_LOCK('servers-test', 0)")).toBe('0');
    expect((await holder).stdout.trim().split('\n')).toEqual(['1', '0', '1']);
  });

  it('pause() freezes it and resume() thaws it', async () => {
    server.pause();
    expect(server.paused).toBe(true);
    expect(await mysqlGreets(server.port, '127.0.0.1', 300)).toBe(false);
    server.resume();
    expect(await mysqlGreets(server.port)).toBe(true);
  });

  it('kill() crashes it; restart() brings it back on the same port with its data', async () => {
    await sql(
      server,
      'CREATE TABLE lockstock.kept (v INT) ENGINE=InnoDB; INSERT INTO lockstock.kept VALUES (7)',
    );
    const pid = server.pid;
    await server.kill();
    expect(server.running).toBe(false);
    expect(await mysqlGreets(server.port)).toBe(false);
    await server.restart();
    expect(server.pid).not.toBe(pid);
    expect(await sql(server, 'SELECT v FROM lockstock.kept')).toBe('7');
  });

  it('stop() ends it even while paused and removes its temp dir', async () => {
    server.pause();
    await server.stop();
    expect(server.running).toBe(false);
    expect(existsSync(server.dir)).toBe(false);
  });
});

describe('several MariaDB servers', () => {
  it('start side by side on their own ports and data', async () => {
    const [a, b] = await Promise.all([MariaDbServer.start(), MariaDbServer.start()]);
    try {
      expect(a.port).not.toBe(b.port);
      await sql(a, 'CREATE TABLE lockstock.only_a (v INT)');
      expect(await sql(b, "SHOW TABLES FROM lockstock LIKE 'only_a'")).toBe('');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
