import type { Logger } from 'pino';
import {
  HttpBeaconSource,
  QUICKNET,
  roundHolds,
  type BeaconChain,
  type BeaconSource,
} from '../sale/raffle/beacon.js';

/** The randomness beacon of this process (raffle sales), as deps of the services to spread. */
export interface BeaconSetting {
  /** SaleService's: the chain new raffles fix in their commitment; none: commit–reveal only. */
  readonly sales?: { beacon: BeaconChain };
  /** RaffleService's: where the draw gets its rounds (also for raffles created before the relay went away). */
  readonly raffles?: { beacon: BeaconSource };
}

/**
 * LOCKSTOCK_BEACON_URL: a drand relay serving quicknet (e.g. https://api.drand.sh/<quicknet chain
 * hash>). The chain (its public key above all) is lockstock's pinned QUICKNET, never read from the
 * relay. The relay is asked once for round 1 at start: a relay that does not answer with a round the
 * chain signed is said so, and new raffles are then created without a beacon (commit–reveal, weaker:
 * docs/raffle-verification.md) rather than fixing a beacon nobody may be able to reach at the draw.
 */
export async function beaconSetting(
  logger: Logger,
  url = process.env.LOCKSTOCK_BEACON_URL,
): Promise<BeaconSetting> {
  if (!url) return {};
  const source = new HttpBeaconSource(url, QUICKNET);
  try {
    const first = await source.round(1);
    if (!first || !roundHolds(QUICKNET, first))
      throw new Error('round 1 is missing or not signed by quicknet');
    logger.info({ beacon: url }, 'randomness beacon reachable: new raffles mix in a drand quicknet round');
    return { sales: { beacon: QUICKNET }, raffles: { beacon: source } };
  } catch (error) {
    logger.warn(
      { beacon: url, err: error instanceof Error ? error.message : String(error) },
      'no randomness beacon reachable: new raffles are commit–reveal only (weaker: the operator knows the seed)',
    );
    return { raffles: { beacon: source } };
  }
}
