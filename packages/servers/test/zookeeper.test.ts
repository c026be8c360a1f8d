import { existsSync, readFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modeOf, ZooKeeperEnsemble, ZooKeeperServer } from '../src/index.js';

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('ZooKeeperServer', () => {
  let zk: ZooKeeperServer;
  beforeAll(async () => {
    zk = await ZooKeeperServer.start({ tickTimeMs: 500 });
  });
  afterAll(async () => {
    await zk?.stop();
  });

  it('serves on its loopback port with the tick asked for, logging to a file in its temp dir', async () => {
    expect(zk.connectString).toBe(`127.0.0.1:${zk.port}`);
    expect(await zk.fourLetterWord('ruok')).toBe('imok');
    expect(modeOf(await zk.fourLetterWord('srvr'))).toBe('standalone');
    expect(await zk.fourLetterWord('conf')).toMatch(/^tickTime=500$/m);
    expect(zk.logFile.startsWith(zk.dir)).toBe(true);
    expect(readFileSync(zk.logFile, 'utf8')).toMatch(/binding to port/i);
  });

  it('pause() freezes it and resume() thaws it', async () => {
    zk.pause();
    await expect(zk.fourLetterWord('ruok', 500)).rejects.toThrow(/no answer/);
    zk.resume();
    expect(await zk.fourLetterWord('ruok')).toBe('imok');
  });

  it('kill() crashes it, leaving no hsperfdata; restart() brings it back on the same port', async () => {
    const pid = zk.pid!;
    await zk.kill();
    expect(zk.running).toBe(false);
    expect(isAlive(pid)).toBe(false);
    expect(existsSync(join(tmpdir(), `hsperfdata_${userInfo().username}`, String(pid)))).toBe(false);
    await expect(zk.fourLetterWord('ruok')).rejects.toThrow(/ECONNREFUSED/);
    await zk.restart();
    expect(zk.pid).not.toBe(pid);
    expect(await zk.fourLetterWord('ruok')).toBe('imok');
  });

  it('stop() ends it even while paused and removes its temp dir', async () => {
    const pid = zk.pid!;
    zk.pause();
    await zk.stop();
    expect(isAlive(pid)).toBe(false);
    expect(existsSync(zk.dir)).toBe(false);
  });
});

describe('ZooKeeperEnsemble', () => {
  it('elects a leader, keeps a quorum with one member stopped or paused, takes it back', async () => {
    const ensemble = await ZooKeeperEnsemble.start({ nodes: 3 });
    try {
      expect(ensemble.connectString.split(',')).toEqual(ensemble.nodes.map((n) => `127.0.0.1:${n.port}`));
      const modes = await Promise.all(ensemble.nodes.map((node) => node.mode()));
      expect(modes.sort()).toEqual(['follower', 'follower', 'leader']);

      const leader = (await ensemble.leader())!;
      await leader.stop();
      expect(leader.running).toBe(false);
      await ensemble.waitForQuorum();
      const next = await ensemble.leader();
      expect(next).toBeDefined();
      expect(next).not.toBe(leader);

      await leader.restart();
      expect(await leader.mode()).toBe('follower');

      const follower = ensemble.nodes.find((node) => node !== next)!;
      follower.pause();
      expect(await follower.mode()).toBeUndefined();
      await ensemble.waitForQuorum();
      follower.resume();
      await ensemble.waitForQuorum();
    } finally {
      await ensemble.stop();
    }
    expect(existsSync(ensemble.dir)).toBe(false);
    expect(ensemble.nodes.every((node) => !node.running)).toBe(true);
  });
});
