import { InvalidArgumentError } from 'commander';

/** Commander parser for integers in [min, max], with a message naming the option. */
export function intOption(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}, got "${value}"`);
    }
    return n;
  };
}

/** Commander parser for a comma-separated list of allowed names. */
export function listOption<T extends string>(allowed: readonly T[]) {
  return (value: string): T[] => {
    const items = value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const unknown = items.filter((item) => !allowed.includes(item as T));
    if (items.length === 0 || unknown.length > 0) {
      throw new InvalidArgumentError(
        `expected a comma-separated list of ${allowed.join(', ')}; unknown: ${unknown.join(', ') || '(empty)'}`,
      );
    }
    return items as T[];
  };
}
