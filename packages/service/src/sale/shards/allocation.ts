/** A transfer step as the record holds it (stock_moves). */
export interface RecordedMove {
  /** The part whose stream held the entry. */
  readonly part: number;
  readonly transferId: string;
  readonly kind: 'out' | 'in';
  /** The receiver of an out, the donor of an in. */
  readonly otherPart: number;
  readonly units: number;
}

/** A transfer step still in a part's stream (maybe not recorded yet). */
export interface StreamMove {
  readonly transferId: string;
  readonly direction: 'out' | 'in';
  readonly otherPart: number;
  readonly units: number;
}

export interface PartAllocation {
  /** Units the part holds: its initial share + units credited − units given. */
  readonly allocation: number;
  /** Transfers the part gave and nobody is known to have been credited: still to be finished. */
  readonly pending: ReadonlyArray<{ readonly id: string; readonly to: number; readonly units: number }>;
  /** Transfers credited to the part. */
  readonly credited: readonly string[];
}

/**
 * What one part of a split sale holds by what was recorded of its transfers, plus the steps its own
 * stream still holds (a step recorded and still in the stream counts once: by transfer id). A transfer
 * counts as given once its debit or its credit is known — a credit is only ever made after its debit
 * — and as pending unless a credit is recorded (one made and not recorded yet is found by whoever
 * finishes it: the receiver answers "credited").
 */
export function partAllocation(
  share: number,
  part: number,
  recorded: readonly RecordedMove[],
  inStream: readonly StreamMove[],
): PartAllocation {
  const gave = new Map<string, { to: number; units: number }>();
  const got = new Map<string, number>();
  const creditRecorded = new Set<string>();
  for (const m of recorded) {
    if (m.kind === 'in') {
      creditRecorded.add(m.transferId);
      if (m.part === part) got.set(m.transferId, m.units);
      if (m.otherPart === part) gave.set(m.transferId, { to: m.part, units: m.units });
    } else if (m.part === part) {
      gave.set(m.transferId, { to: m.otherPart, units: m.units });
    }
  }
  for (const m of inStream) {
    if (m.direction === 'out') gave.set(m.transferId, { to: m.otherPart, units: m.units });
    else got.set(m.transferId, m.units);
  }
  let allocation = share;
  for (const units of got.values()) allocation += units;
  for (const { units } of gave.values()) allocation -= units;
  return {
    allocation,
    pending: [...gave]
      .filter(([id]) => !creditRecorded.has(id))
      .map(([id, { to, units }]) => ({ id, to, units })),
    credited: [...got.keys()],
  };
}
