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

export type KnobMap = Record<string, Record<string, number | string | boolean>>;

/**
 * Commander parser for repeatable `<name>.<knob>=<value>` settings (numbers and true/false are
 * typed), accumulated per name; `allowed` lists the valid names.
 */
export function knobOption(allowed: readonly string[]) {
  return (value: string, previous: KnobMap = {}): KnobMap => {
    const match = /^([\w-]+)\.(\w+)=(.*)$/.exec(value.trim());
    if (!match) {
      throw new InvalidArgumentError(
        `expected <strategy>.<knob>=<value>, e.g. sql-optimistic.retries=3, got "${value}"`,
      );
    }
    const [, name, knob, raw] = match as unknown as [string, string, string, string];
    if (!allowed.includes(name)) {
      throw new InvalidArgumentError(`unknown strategy "${name}"; expected one of ${allowed.join(', ')}`);
    }
    const typed =
      raw === 'true'
        ? true
        : raw === 'false'
          ? false
          : raw !== '' && Number.isFinite(Number(raw))
            ? Number(raw)
            : raw;
    return { ...previous, [name]: { ...previous[name], [knob]: typed } };
  };
}

/**
 * The one `--json [file]` of every command: the JSON report goes to `file`, or to stdout — instead of
 * the table or text report — when no file is given or it is `-`. Undefined: no JSON.
 */
export type JsonTarget = { readonly file: string } | 'stdout' | undefined;

export const JSON_OPTION_HELP =
  'the report as JSON: written to file (the table is printed too), or without a file (or with -) printed to stdout instead of the table';

export function jsonTarget(value: string | boolean | undefined): JsonTarget {
  if (value === undefined || value === false) return undefined;
  if (value === true || value === '-') return 'stdout';
  return { file: value };
}
