import { SPI_VERSION } from '../../support/brand.js';
import { IncompatibleBackendError } from '../errors.js';
import type { LockBackend } from './spi.js';

/**
 * What a backend written for SPI version 1 must change to run on version 2, each with how it shows on
 * the backend object where it can (a backend that declares no `spiVersion` is recognised by shape).
 * The same list as docs/backend.md's "Backends must".
 */
const SINCE_SPI_1: ReadonlyArray<{ readonly change: string; readonly shows?: (backend: object) => boolean }> =
  [
    {
      change:
        "its countDownLatch(name) factory becomes latch(name), returning a LatchResource — the store's part only (trySetCount, countDown, count, and a wakeChannel or watchCount); the core waits, and BackendHost no longer has waiters",
      shows: (backend) => 'countDownLatch' in backend && !('latch' in backend),
    },
    {
      change:
        "forceUnlock(made) receives that LatchResource for a latch; a release's HandOffOffer has no mode ('handoff' | 'yield'): hand off or decline by the backend's own policy",
    },
    {
      change: `its Granted and Busy must be this lockstock's (SPI ${SPI_VERSION}): make lockstock a peer dependency`,
    },
  ];

/**
 * Refuses, when a client is made, a backend written for another SPI version: one that declares
 * another `spiVersion`, or shows SPI 1's shape (a countDownLatch factory). Its first lock would
 * otherwise fail, or wait forever, in some later call.
 */
export function checkBackendSpi(backend: LockBackend): void {
  const declared = backend.spiVersion;
  if (declared !== undefined && declared !== SPI_VERSION) {
    const changes = declared === 1 ? SINCE_SPI_1.map((entry) => entry.change) : [];
    throw new IncompatibleBackendError(backend.name, declared, changes);
  }
  if (declared === undefined && SINCE_SPI_1.some((entry) => entry.shows?.(backend))) {
    throw new IncompatibleBackendError(
      backend.name,
      1,
      SINCE_SPI_1.map((entry) => entry.change),
    );
  }
}
