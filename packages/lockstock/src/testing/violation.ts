/**
 * How the contract says what broke: one sentence — the kind, the rule violated, by whom — and the
 * excerpt of the recorded history that shows it, with times in ms from the run's start. A failure a
 * reader must decode from an object dump or a bare timeout is a failure nobody can act on.
 */
import type { SectionRecord } from './history.js';

/** The backend broke a rule of its kind's contract: `message` is the sentence. */
export class ContractViolation extends Error {
  override readonly name = 'ContractViolation';
  readonly code = 'ERR_LOCK_CONTRACT_VIOLATED';

  constructor(
    /** The lock kind (a contract subject), e.g. 'semaphore'. */
    readonly kind: string,
    /** What was violated, e.g. '4 holders inside at once with 3 permits'. */
    readonly rule: string,
    /** The history that shows it (who, when), or '' when the rule says it all. */
    readonly excerpt = '',
  ) {
    super(excerpt ? `${kind}: ${rule}: ${excerpt}` : `${kind}: ${rule}`);
  }
}

/** Throws a ContractViolation unless `holds`; the sentence is built only when it is needed. */
export function demand(
  holds: boolean,
  kind: string,
  rule: () => string,
  excerpt: () => string = () => '',
): void {
  if (!holds) throw new ContractViolation(kind, rule(), excerpt());
}

/** Monotonic ns (a bigint or its decimal string) as ms from `origin`, one decimal. */
export function msFrom(origin: bigint, t: bigint | string): string {
  return (Number(BigInt(t) - origin) / 1e6).toFixed(1);
}

/** The earliest time of `records` (the origin their excerpts count from). */
export function originOf(records: readonly SectionRecord[]): bigint {
  return records.reduce((min, r) => (BigInt(r.invokedAt) < min ? BigInt(r.invokedAt) : min), 2n ** 63n);
}

/** One section as an excerpt: `owner o (token 5, pid 12) held from 120.0 to 131.2 ms`. */
export function describeSection(r: SectionRecord, origin: bigint): string {
  const held = `held from ${msFrom(origin, r.acquiredAt)} to ${msFrom(origin, r.releasingAt)} ms`;
  return `owner ${r.owner} (token ${r.token}, pid ${r.pid}${r.mode === 'exclusive' ? '' : `, ${r.mode}`}) ${held}`;
}

/** Several sections, at most `limit` of them named (the rest counted). */
export function describeSections(records: readonly SectionRecord[], origin: bigint, limit = 6): string {
  const named = records.slice(0, limit).map((r) => describeSection(r, origin));
  const more = records.length - named.length;
  return named.join('; ') + (more > 0 ? `; and ${more} more` : '');
}

const start = (r: SectionRecord) => BigInt(r.acquiredAt);
const end = (r: SectionRecord) => BigInt(r.releasingAt);

/**
 * The most sections whose recorded holding intervals ([acquired, releasing)) include one instant, and
 * which they are: the excerpt of a bound exceeded.
 */
export function mostCrowded(records: readonly SectionRecord[]): SectionRecord[] {
  let best: SectionRecord[] = [];
  for (const r of records) {
    const at = start(r);
    const inside = records.filter((o) => start(o) <= at && at < end(o));
    if (inside.length > best.length) best = inside;
  }
  return best.sort((a, b) => (start(a) < start(b) ? -1 : 1));
}

/** The first two sections that overlap where one of them must be alone (exclusive), if any. */
export function firstExclusiveOverlap(
  records: readonly SectionRecord[],
): [SectionRecord, SectionRecord] | undefined {
  const sorted = [...records].sort((a, b) => (start(a) < start(b) ? -1 : start(a) > start(b) ? 1 : 0));
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i + 1; j < sorted.length && start(sorted[j]!) < end(sorted[i]!); j++) {
      if (sorted[i]!.mode === 'exclusive' || sorted[j]!.mode === 'exclusive') return [sorted[i]!, sorted[j]!];
    }
  }
  return undefined;
}
