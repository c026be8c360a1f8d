import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ForeignBackendResultError, LockTimeoutError } from '../../src/index.js';
import {
  Busy,
  LockClientBase,
  type AttemptResult,
  type LockBackend,
  type LockResource,
} from '../../src/backend/index.js';

/**
 * A backend package that resolved another copy of lockstock: its Granted, Busy and LockUpgradeError
 * are the other copy's classes. The copy is real — the built dist/ copied to a temporary directory
 * and imported from there — and the client is this copy's (src/). Before the brands, the core read
 * the other copy's Busy as a grant: tryAcquire() was granted while the lock was held.
 */
type Spi = typeof import('../../src/backend/index.js');
type Errors = typeof import('../../src/locks/errors.js');

const dist = fileURLToPath(new URL('../../dist', import.meta.url));
let dir: string;
let copy: Spi;
let copyErrors: Errors;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lockstock-copy-'));
  cpSync(dist, join(dir, 'dist'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'lockstock', type: 'module' }));
  copy = (await import(pathToFileURL(join(dir, 'dist/backend/index.js')).href)) as Spi;
  copyErrors = (await import(pathToFileURL(join(dir, 'dist/locks/errors.js')).href)) as Errors;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One holder per name, answered with `answer`'s classes (the other copy's, or anything at all). */
function mutex(name: string, state: { holder?: string; token: number }, busy: () => AttemptResult) {
  const resource: LockResource = {
    name,
    waitKey: name,
    wakeChannel: undefined,
    leases: 'none',
    handsOff: false,
    async attempt({ owner }) {
      if (state.holder !== undefined && state.holder !== owner) return busy();
      state.holder = owner;
      return new copy.Granted(++state.token, false);
    },
    async release(owner) {
      if (state.holder !== owner) return { outcome: 'expired' };
      state.holder = undefined;
      return { outcome: 'released' };
    },
    async extend() {
      return 'expired';
    },
    async inspect() {
      return { held: state.holder !== undefined, holders: state.holder ? 1 : 0, remainingMs: undefined };
    },
    leave() {},
  };
  return resource;
}

function backendOf(busy: () => AttemptResult): LockBackend {
  const state = { token: 0 };
  return {
    name: 'other-copy',
    capabilities: { leases: 'session', fencing: 'counter', wakeUps: 'backoff', unsupported: {} },
    mutex: (name) => mutex(name, state, busy),
    readWrite: (name) => ({
      read: mutex(name, state, busy),
      write: {
        ...mutex(name, state, busy),
        attempt: ({ owner }) => Promise.reject(new copyErrors.LockUpgradeError(name, owner)),
      },
    }),
    forceUnlock: async () => false,
    close: async () => {},
  };
}

describe('a backend built on another copy of lockstock', () => {
  it("is a real second copy: its classes are not this copy's", () => {
    expect(copy.Busy).not.toBe(Busy);
    expect(copy.LockClientBase).not.toBe(LockClientBase);
  });

  it('its Busy is a refusal: tryAcquire() is not granted while the lock is held', async () => {
    const client = new LockClientBase(() => backendOf(() => new copy.Busy(5)));
    const lock = client.mutex('m');
    const held = await lock.acquire();
    expect(held.fencingToken).toBe(1);
    expect(await lock.tryAcquire()).toBeUndefined();
    await expect(lock.acquire({ waitMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
    expect(await held.release()).toBe('released');
    const next = await lock.acquire();
    expect(next.fencingToken).toBe(2);
    await next.release();
    await client.close();
  });

  it("its LockUpgradeError is the core's: the write side's tryAcquire() answers no", async () => {
    const client = new LockClientBase(() => backendOf(() => new copy.Busy(5)));
    expect(await client.readWrite('rw').write.tryAcquire()).toBeUndefined();
    await client.close();
  });

  it('an answer of another SPI version, or no answer of the SPI at all, is refused with a typed error', async () => {
    const future = Object.assign(Object.create(null) as object, {
      retryAfterMs: 5,
      [Symbol.for('lockstock.spi')]: 999,
    });
    for (const [answer, version] of [
      [future, 999],
      [{ retryAfterMs: 5 }, undefined],
    ] as const) {
      const client = new LockClientBase(() => backendOf(() => answer as unknown as AttemptResult));
      const held = await client.mutex('m').acquire();
      const refused = await client
        .mutex('m')
        .tryAcquire()
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ForeignBackendResultError);
      expect((refused as ForeignBackendResultError).spiVersion).toBe(version);
      expect((refused as Error).message).toContain('peer dependency');
      await held.release();
      await client.close();
    }
  });
});
