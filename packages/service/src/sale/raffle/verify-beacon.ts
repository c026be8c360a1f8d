import { drawSeedOf, QUICKNET, roundAfter, roundHolds, sameChain, type BeaconChain } from './beacon.js';
import type { PublishedRaffle } from './raffles.js';
import type { RaffleCommitment } from './signing.js';

type Check = (ok: boolean, line: string) => void;

/** What the beacon checks leave for the rest of `verifyRaffle`. */
export interface BeaconVerdict {
  /** The seed the places are ordered by (hex): the seed, or SHA-256(seed ‖ the round's randomness). */
  readonly drawSeed: string;
  /** What the checks cannot show (not failures). */
  readonly notes: readonly string[];
}

/**
 * The chains a verifier trusts by default: drand's quicknet, pinned here (its key above all, but also
 * its genesis and period: they decide which round a close fixes). A chain the commitment names that
 * is not one of these fails: an operator could name a "beacon" whose key they hold.
 */
export const TRUSTED_CHAINS: readonly BeaconChain[] = [QUICKNET];

/**
 * The beacon part of a raffle's verification, offline: the commitment held apart names a chain (or
 * none: commit–reveal only, said as a note); that chain is one the verifier trusts; the round the
 * draw used is the first after the committed close (`closesAt`, fixed at creation), the one the
 * signed close statement names; the round is signed by the chain's key (a BLS pairing check, no
 * network). Returns the seed the places must follow.
 */
export function checkBeacon(
  data: PublishedRaffle & { seed: string },
  commitment: RaffleCommitment | undefined,
  trusted: readonly BeaconChain[],
  check: Check,
): BeaconVerdict {
  const seed = Buffer.from(data.seed, 'hex');
  const chain = commitment?.beacon ?? null;
  if (!commitment || !chain) {
    if (data.beaconRound) {
      check(false, 'a beacon round is published but the commitment held names no beacon');
    }
    return {
      drawSeed: data.seed,
      notes: [
        'no randomness beacon in the commitment: commit–reveal only — the operator knew the seed before the close and could have entered ids of their own chosen to sort first; the entry count is the evidence against that, not a proof',
      ],
    };
  }
  const known = trusted.some((c) => sameChain(c, chain));
  const pinned = TRUSTED_CHAINS.some((c) => sameChain(c, chain));
  check(
    known,
    !known
      ? `the commitment's beacon (chain ${chain.chainHash}, key ${chain.publicKey.slice(0, 16)}…) is NOT a chain this verifier trusts: its key could be the operator's (trust it only knowing whose it is: --trust-chain <its drand /info>)`
      : pinned
        ? `the commitment's beacon is drand chain ${chain.chainHash}, pinned by this verifier`
        : `the commitment's beacon is drand chain ${chain.chainHash}, NOT pinned by lockstock: trusted only because it was given by hand`,
  );
  const expected = roundAfter(chain, Date.parse(commitment.closesAt));
  const stated = data.close?.payload.round;
  check(
    stated === expected,
    stated === expected
      ? `the close statement fixes round ${expected}, the first after the committed close ${commitment.closesAt}`
      : `the close statement fixes round ${stated ?? '(none)'}, NOT ${expected}, the first after the committed close ${commitment.closesAt}`,
  );
  const used = data.beaconRound;
  check(
    used?.round === expected,
    used === undefined
      ? `no beacon round is published: the draw must mix in round ${expected}`
      : used.round === expected
        ? `the draw used round ${used.round}`
        : `the draw used round ${used.round}, NOT round ${expected}: a round chosen after the fact`,
  );
  const holds = used !== undefined && roundHolds(chain, used);
  check(
    holds,
    holds
      ? `round ${used.round}'s signature holds under the chain's public key (BLS, checked offline)`
      : `round ${used?.round ?? expected}'s published signature is NOT the chain's: forged or corrupted`,
  );
  return {
    drawSeed: drawSeedOf(seed, used).toString('hex'),
    notes: [
      `the draw mixed in drand round ${expected}, published after entries closed: nobody, the operator included, knew it when the entry list was fixed`,
    ],
  };
}
