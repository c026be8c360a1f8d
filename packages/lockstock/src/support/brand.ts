/**
 * Brands for the values the core recognises from a backend (Granted, Busy, LockUpgradeError and the
 * other lock errors), so that they are recognised across two copies of lockstock in one program.
 *
 * A backend package that resolves its own copy of lockstock (a duplicate in node_modules, a bundled
 * copy) hands the core objects of the other copy's classes: a plain `instanceof` fails on them, and
 * the core once read a foreign Busy as a grant. Each such object carries the global symbol
 * `Symbol.for('lockstock.spi')` set to the SPI version, and each branded class answers `instanceof`
 * for objects of the same class name and the same SPI version from any copy. An object of another SPI
 * version is not recognised: the core then refuses the backend's answer (ForeignBackendResultError)
 * instead of guessing.
 */

/**
 * Version of the backend SPI (`lockstock/backend`): raised whenever a backend written for the previous
 * one must change — the recognised values' shape, or what the interfaces ask and offer. 2: the latch
 * is a LatchResource and the core waits (BackendHost lost `waiters`); `HandOffOffer` has no `mode`
 * (docs/backend.md, "Backends must").
 */
export const SPI_VERSION = 2;

/** The global symbol every branded object carries, set to its copy's SPI_VERSION. */
export const SPI_BRAND: unique symbol = Symbol.for('lockstock.spi') as never;

const ordinaryInstanceOf = Function.prototype[Symbol.hasInstance];

/** The SPI version `value` was branded with by whichever copy of lockstock made it, if any. */
export function spiVersionOf(value: unknown): unknown {
  return typeof value === 'object' && value !== null
    ? (value as Record<symbol, unknown>)[SPI_BRAND]
    : undefined;
}

/**
 * `instanceof` for a branded class: an object of this copy's class, or one branded with the same SPI
 * version whose prototype chain has a class of the same name (the same class of another copy).
 */
export function brandedInstanceOf(cls: abstract new (...args: never[]) => unknown, value: unknown): boolean {
  if (ordinaryInstanceOf.call(cls, value)) return true;
  if (spiVersionOf(value) !== SPI_VERSION) return false;
  for (
    let proto = Object.getPrototypeOf(value) as object | null;
    proto;
    proto = Object.getPrototypeOf(proto)
  ) {
    if ((proto as { constructor?: { name?: string } }).constructor?.name === cls.name) return true;
  }
  return false;
}
