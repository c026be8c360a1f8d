import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ForeignBackendResultError, IncompatibleBackendError } from '../../src/index.js';
import {
  Busy,
  Granted,
  LockClientBase,
  SPI_VERSION,
  type AttemptResult,
  type LockBackend,
  type LockResource,
} from '../../src/backend/index.js';

/**
 * Backends written for the previous backend SPI (version 1) on this lockstock (version 2): one that
 * uses only what version 2 kept compiles (this file is type-checked with the package) and runs; one
 * that shows what version 2 changed (a countDownLatch factory) or declares another version is refused
 * by name when its client is made, with IncompatibleBackendError saying what it must change; one on a
 * copy of lockstock of version 1 has its answers refused with ForeignBackendResultError.
 */
function mutexResource(name: string, state: { holder?: string; token: number }, busy: () => AttemptResult) {
  const resource: LockResource = {
    name,
    waitKey: name,
    wakeChannel: undefined,
    leases: 'none',
    handsOff: false,
    async attempt({ owner }) {
      if (state.holder !== undefined && state.holder !== owner) return busy();
      state.holder = owner;
      return new Granted(++state.token, false);
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

/** A mutex-only backend as SPI 1 allowed, declaring no version: nothing it uses changed. */
function spi1Mutex(busy: () => AttemptResult, extra: object = {}): LockBackend {
  const state = { token: 0 };
  return {
    name: 'spi1-mutex',
    capabilities: {
      leases: 'session',
      fencing: 'counter',
      wakeUps: 'backoff',
      unsupported: { latch: 'not in this backend' },
    },
    mutex: (name) => mutexResource(name, state, busy),
    forceUnlock: async () => false,
    close: async () => {},
    ...extra,
  };
}

describe('a backend written for the previous SPI version', () => {
  it('compiles and runs when it uses only what version 2 kept', async () => {
    const client = new LockClientBase(() => spi1Mutex(() => new Busy(5)));
    const lock = client.mutex('m');
    const held = await lock.acquire();
    expect(await lock.tryAcquire()).toBeUndefined();
    expect(await held.release()).toBe('released');
    expect((await lock.acquire()).fencingToken).toBe(2);
    await client.close();
  });

  it("is refused by name when it has SPI 1's countDownLatch factory, saying what to change", async () => {
    let closed = false;
    // As a published SPI 1 backend built it: a whole latch, waiting through host.waiters.
    const legacy = spi1Mutex(() => new Busy(5), {
      countDownLatch: () => ({}),
      close: async () => void (closed = true),
    });
    const make = () => new LockClientBase(() => legacy);
    expect(make).toThrow(IncompatibleBackendError);
    const error = (() => {
      try {
        make();
      } catch (caught) {
        return caught as IncompatibleBackendError;
      }
    })()!;
    expect(error.code).toBe('ERR_INCOMPATIBLE_BACKEND');
    expect(error.backend).toBe('spi1-mutex');
    expect(error.spiVersion).toBe(1);
    expect(error.message).toContain('latch(name)');
    expect(error.message).toContain('Backends must');
    expect(error.changes.length).toBeGreaterThan(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(true); // what it opened is closed again
  });

  it('is refused when it declares another version, and runs when it declares this one', async () => {
    for (const spiVersion of [1, SPI_VERSION + 1]) {
      const declared = spi1Mutex(() => new Busy(5), { spiVersion });
      expect(() => new LockClientBase(() => declared)).toThrow(
        expect.objectContaining({ name: 'IncompatibleBackendError', spiVersion }),
      );
    }
    const current = new LockClientBase(() => spi1Mutex(() => new Busy(5), { spiVersion: SPI_VERSION }));
    await (await current.mutex('m').acquire()).release();
    await current.close();
  });
});

describe('a backend on a copy of lockstock of SPI version 1', () => {
  type Spi = typeof import('../../src/backend/index.js');
  let dir: string;
  let copy: Spi;

  beforeAll(async () => {
    // The built dist/, copied and turned into version 1 (as an install of the previous release).
    dir = mkdtempSync(join(tmpdir(), 'lockstock-spi1-'));
    cpSync(fileURLToPath(new URL('../../dist', import.meta.url)), join(dir, 'dist'), { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'lockstock', type: 'module' }));
    const brand = join(dir, 'dist/support/brand.js');
    const text = readFileSync(brand, 'utf8');
    expect(text).toMatch(/export const SPI_VERSION = \d+;/);
    writeFileSync(brand, text.replace(/export const SPI_VERSION = \d+;/, 'export const SPI_VERSION = 1;'));
    copy = (await import(pathToFileURL(join(dir, 'dist/backend/index.js')).href)) as Spi;
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("has its answers refused by name: ForeignBackendResultError with the copy's version", async () => {
    expect(copy.SPI_VERSION).toBe(1);
    const client = new LockClientBase(() => spi1Mutex(() => new copy.Busy(5)));
    const held = await client.mutex('m').acquire(); // this copy's grant: read
    const refused = await client
      .mutex('m')
      .tryAcquire()
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ForeignBackendResultError);
    expect((refused as ForeignBackendResultError).backend).toBe('spi1-mutex');
    expect((refused as ForeignBackendResultError).spiVersion).toBe(1);
    expect((refused as Error).message).toContain('SPI version 1');
    await held.release();
    await client.close();
  });
});
