import { createHash } from 'node:crypto';
import type { BeaconChain } from './beacon.js';
import { merkleRoot } from './merkle.js';
import type { PublishedRaffle } from './raffles.js';
import {
  canonicalJson,
  keyNameOf,
  signatureHolds,
  type ClosePayload,
  type CloseStatement,
  type EntryReceipt,
} from './signing.js';
import { checkBeacon, TRUSTED_CHAINS } from './verify-beacon.js';

/** What `verifyRaffle` found. */
export interface RaffleVerdict {
  /** True when every check passed (a raffle not drawn yet is never ok: there is nothing to check). */
  readonly ok: boolean;
  /** One line per check, as printed by `lockstock raffle verify`. */
  readonly checks: ReadonlyArray<{ ok: boolean; line: string }>;
  /** Entrants given a unit: places 1..winners. */
  readonly winners: number;
  /** What the checks cannot show, said with the verdict (not failures). */
  readonly notes: readonly string[];
  /** The place of the entry asked about (the receipt's, or `entryHash`), when it is in the list. */
  readonly entry?: { hash: string; position: number; won: boolean };
}

/**
 * What the verifier holds apart from the document it checks. The commitment comes from here — a
 * receipt the service signed when it accepted an entry, or a seed hash given by hand — never from
 * the document: a document rewritten after the draw would otherwise vouch for itself.
 */
export interface VerifyInputs {
  /** An entry receipt (POST /api/sales/:id/raffle/entries): the commitment, the key, an entry. */
  readonly receipt?: EntryReceipt;
  /** The seed hash committed to (hex), when there is no receipt. */
  readonly seedHash?: string;
  /** The service's public key (base64url, GET /.well-known/lockstock/raffle-key), pinned. */
  readonly publicKey?: string;
  /** Also find this entry (SHA-256 of "<sale id>:<user id>"); missing is a failure. */
  readonly entryHash?: string;
  /**
   * The close statement as published at the close, saved then. The operator holds the key and can
   * sign a second statement for a list changed later; one saved before is the evidence against it.
   */
  readonly savedClose?: CloseStatement;
  /** The beacon chains trusted (verify-beacon.ts). @default TRUSTED_CHAINS: drand's quicknet */
  readonly trustedChains?: readonly BeaconChain[];
}

/**
 * The draw's place of each entry, recomputed here from the draw seed and the entry hashes alone (its
 * own code, not the service's SQL, draw-order.sql): ascending SHA-256(seed ‖ entry hash as bytes),
 * ties by the entry hash. The draw seed is the seed, or with a beacon SHA-256(seed ‖ the round's
 * randomness) (beacon.ts drawSeedOf). Returns the hashes in draw order.
 */
export function drawOrder(seedHex: string, hashes: readonly string[]): string[] {
  const seed = Buffer.from(seedHex, 'hex');
  return hashes
    .map((hash) => ({
      hash,
      key: createHash('sha256').update(seed).update(Buffer.from(hash, 'hex')).digest('hex'),
    }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0))
    .map((entry) => entry.hash);
}

const HEX64 = /^[0-9a-f]{64}$/;

/**
 * Checks a raffle from its published data against a commitment held apart (VerifyInputs):
 *
 * - the receipt is signed by the service's key (the one pinned, if given) for this sale;
 * - the close statement is signed by that same key, carries the same commitment, and its Merkle root
 *   and count are the published list's (an entry added, deleted or changed after the close fails);
 * - the revealed seed hashes to the held commitment (not the document's own seedHash);
 * - with a beacon in the commitment: the chain is trusted, the round is the first after the committed
 *   close and signed by the chain's key (verify-beacon.ts, offline);
 * - the published places are the draw order recomputed from the seed (and round) and the entries;
 * - the entrants given a unit are the first in that order, and at least the first `stock`;
 * - the receipt's entry (or `entryHash`) is in the list: an accepted entry dropped fails;
 * - the close statement is the one saved at the close, when one was (`savedClose`).
 */
export function verifyRaffle(data: PublishedRaffle, inputs: VerifyInputs = {}): RaffleVerdict {
  const checks: Array<{ ok: boolean; line: string }> = [];
  const check = (ok: boolean, line: string) => checks.push({ ok, line });
  const won = data.entries.filter((e) => e.won);
  const { receipt } = inputs;
  const held = heldCommitment(data, inputs, check);
  const key = inputs.publicKey ?? receipt?.publicKey;
  if (data.phase !== 'drawn' || !data.seed) {
    check(
      false,
      `raffle ${data.saleId} is not drawn yet (${data.entries.length} entries so far): nothing to verify`,
    );
    return { ok: false, checks, winners: won.length, notes: [] };
  }
  const hashes = data.entries.map((e) => e.hash);
  const wellFormed = hashes.every((h) => HEX64.test(h)) && new Set(hashes).size === hashes.length;
  check(
    wellFormed,
    wellFormed
      ? `${hashes.length} distinct entry hashes`
      : 'the entry list has malformed or repeated entry hashes',
  );
  checkClose(data, held, key, hashes, check);
  if (inputs.savedClose) {
    const same = data.close !== undefined && canonicalJson(data.close) === canonicalJson(inputs.savedClose);
    check(
      same,
      same
        ? 'the published close statement is the one saved at the close'
        : 'the published close statement is NOT the one saved at the close: the list was signed again',
    );
  }

  const seedHash = createHash('sha256').update(Buffer.from(data.seed, 'hex')).digest('hex');
  const seedOk = held?.seedHash !== undefined && seedHash === held.seedHash && HEX64.test(data.seed);
  check(
    seedOk,
    seedOk
      ? `the revealed seed matches the commitment ${held?.seedHash}`
      : `the revealed seed (SHA-256 ${seedHash}) does NOT match the commitment ${held?.seedHash ?? '(none held)'}`,
  );
  const stated = data.close?.payload.commitment;
  const commitment = held?.full ?? (stated?.seedHash === held?.seedHash ? stated : undefined);
  const beacon = checkBeacon(
    { ...data, seed: data.seed },
    commitment,
    inputs.trustedChains ?? TRUSTED_CHAINS,
    check,
  );
  const order = drawOrder(beacon.drawSeed, hashes);
  const placeOf = new Map(order.map((hash, i) => [hash, i + 1]));
  const misplaced = data.entries.filter((e) => e.position !== placeOf.get(e.hash));
  check(
    misplaced.length === 0 && placeOf.size === data.entries.length,
    misplaced.length === 0
      ? `draw order recomputed from the ${commitment?.beacon ? 'seed, the beacon round' : 'seed'} and ${data.entries.length} entries: every place matches`
      : `${misplaced.length} of ${data.entries.length} entries are NOT at the place the draw seed gives them (first: ${misplaced[0]?.hash})`,
  );
  const wonPlaces = won.map((e) => placeOf.get(e.hash) ?? 0).sort((a, b) => a - b);
  const prefix = wonPlaces.every((place, i) => place === i + 1);
  check(
    prefix,
    prefix
      ? `winners are the first ${won.length} entrants in draw order`
      : `winners are NOT the first entrants in draw order (places ${wonPlaces.slice(0, 10).join(', ')}…)`,
  );
  const due = Math.min(data.stock, data.entries.length);
  check(
    won.length >= due,
    won.length >= due
      ? `the first ${due} entrants (stock ${data.stock}) were all given a unit`
      : `only ${won.length} entrants were given a unit where the stock (${data.stock}) covers ${due}: not all recorded yet, or withheld`,
  );
  const sought = receipt?.payload.entryHash ?? inputs.entryHash;
  const position = sought === undefined ? undefined : placeOf.get(sought);
  if (sought !== undefined) {
    check(
      position !== undefined,
      position !== undefined
        ? `entry ${sought} is in the list, at place ${position}`
        : `entry ${sought} is NOT in the list${receipt ? ' although its receipt shows it was accepted: dropped' : ''}`,
    );
  }
  return {
    ok: checks.every((c) => c.ok),
    checks,
    winners: won.length,
    notes: beacon.notes,
    ...(sought === undefined || position === undefined
      ? {}
      : { entry: { hash: sought, position, won: data.entries.some((e) => e.hash === sought && e.won) } }),
  };
}

type Check = (ok: boolean, line: string) => void;

type Held = { seedHash: string; full?: ClosePayload['commitment'] } | undefined;

/** The commitment the verifier holds: the receipt's (checked), or the seed hash given; else none. */
function heldCommitment(data: PublishedRaffle, inputs: VerifyInputs, check: Check): Held {
  const { receipt } = inputs;
  if (receipt) {
    const signed = signatureHolds(receipt, 'lockstock.raffle.entry.v1');
    const pinned = inputs.publicKey === undefined || receipt.publicKey === inputs.publicKey;
    const commitment = signed ? receipt.payload.commitment : undefined;
    const sale = commitment?.saleId === data.saleId;
    check(
      signed && pinned && sale,
      !signed
        ? 'the receipt is NOT signed by the key it names (or is not an entry receipt)'
        : !pinned
          ? `the receipt is signed by key ${keyNameOf(receipt)}, NOT the key given (--key)`
          : !sale
            ? `the receipt is for sale ${commitment?.saleId}, NOT ${data.saleId}`
            : `receipt for entry ${receipt.payload.entryHash} signed by key ${keyNameOf(receipt)}; commitment: seed hash ${commitment?.seedHash}, entries close by ${commitment?.closesAt}`,
    );
    if (!signed || !pinned || !sale || !commitment) return undefined;
    return { seedHash: commitment.seedHash, full: commitment };
  }
  if (inputs.seedHash !== undefined) {
    const ok = HEX64.test(inputs.seedHash);
    check(
      ok,
      ok ? `commitment given: seed hash ${inputs.seedHash}` : 'the seed hash given is not hex SHA-256',
    );
    return ok ? { seedHash: inputs.seedHash } : undefined;
  }
  check(
    false,
    "no commitment held apart from the document (--receipt <file> or --seed-hash <hex>): the document's own seedHash proves nothing",
  );
  return undefined;
}

/** The signed close statement: the held key's, the held commitment, the published list's root. */
function checkClose(
  data: PublishedRaffle,
  held: Held,
  key: string | undefined,
  hashes: readonly string[],
  check: Check,
): void {
  const close = data.close;
  const signed = close !== undefined && signatureHolds(close, 'lockstock.raffle.close.v1');
  const byKey = signed && key !== undefined && close.publicKey === key;
  check(
    byKey,
    !signed
      ? 'no close statement signed by the key it names is published'
      : key === undefined
        ? 'the close statement is signed by a key nobody pinned (--receipt or --key)'
        : byKey
          ? `the close statement is signed by the same key (${keyNameOf(close)})`
          : `the close statement is signed by key ${keyNameOf(close)}, NOT the receipt's or the one given`,
  );
  if (!close || !signed) return;
  const stated = close.payload.commitment;
  const same =
    held !== undefined &&
    (held.full
      ? canonicalJson(held.full) === canonicalJson(stated)
      : stated.seedHash === held.seedHash && stated.saleId === data.saleId);
  check(
    same,
    same
      ? 'the close statement carries the same commitment'
      : `the close statement's commitment (seed hash ${stated.seedHash}, close ${stated.closesAt}) is NOT the one held`,
  );
  const root = merkleRoot(hashes);
  const listOk = root === close.payload.root && hashes.length === close.payload.entries;
  check(
    listOk,
    listOk
      ? `the published list is the one signed at the close: ${hashes.length} entries, Merkle root ${root}`
      : `the published list (${hashes.length} entries, root ${root}) is NOT the one signed at the close (${close.payload.entries} entries, root ${close.payload.root})`,
  );
}
