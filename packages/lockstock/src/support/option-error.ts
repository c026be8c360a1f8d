import { brandedInstanceOf, SPI_BRAND, SPI_VERSION } from './brand.js';
/**
 * The error for a bad option of any lockstock API. It lives at the bottom layer because the Redis
 * plumbing (a client given by shape) reports it as well as the locks; locks/errors.ts re-exports it.
 */
/** An option had a wrong type or an out-of-range value; reported before any I/O. */
export class InvalidLockOptionError extends TypeError {
  override readonly name = 'InvalidLockOptionError';
  /** Recognises this error of another copy of lockstock too (same SPI version): see brand.ts. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return brandedInstanceOf(this, value);
  }
  readonly code = 'ERR_INVALID_LOCK_OPTION';
  constructor(
    readonly option: string,
    expectation: string,
    readonly value: unknown,
  ) {
    super(`Option "${option}" must be ${expectation}; got ${formatValue(value)}`);
  }
}
Object.defineProperty(InvalidLockOptionError.prototype, SPI_BRAND, { value: SPI_VERSION });

function formatValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  return typeof value;
}
