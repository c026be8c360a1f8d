import type { Logger } from 'pino';
import { readChainInfo } from '../sale/raffle/chain-info.js';
import {
  HttpBeaconSource,
  QUICKNET,
  roundHolds,
  sameChain,
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
 * relay — unless LOCKSTOCK_BEACON_CHAIN names a file holding another chain's drand `/info` (a chain of
 * one's own, a test network): then that chain, said in a warning at start, since `raffle verify`
 * trusts such raffles only when given the same file (`--trust-chain`). The relay is asked once for
 * round 1 at start: a relay that does not answer with a round the chain signed is said so, and new
 * raffles are then created without a beacon (commit–reveal, weaker: docs/raffle-verification.md)
 * rather than fixing a beacon nobody may be able to reach at the draw. A chain file that cannot be
 * read, or is given without a relay, stops the start: the operator asked for something not done.
 */
export async function beaconSetting(logger: Logger, env = process.env): Promise<BeaconSetting> {
  const url = env.LOCKSTOCK_BEACON_URL;
  const file = env.LOCKSTOCK_BEACON_CHAIN;
  if (!url) {
    if (file)
      throw new Error('LOCKSTOCK_BEACON_CHAIN is set without LOCKSTOCK_BEACON_URL: set the relay too');
    return {};
  }
  const chain = file ? await readChainInfo(file) : QUICKNET;
  if (!sameChain(chain, QUICKNET)) {
    logger.warn(
      { chain: chain.chainHash, publicKey: chain.publicKey, file },
      'randomness beacon: a drand chain given by hand (LOCKSTOCK_BEACON_CHAIN), not quicknet — raffle verify trusts its raffles only with --trust-chain <this file>',
    );
  }
  const source = new HttpBeaconSource(url, chain);
  try {
    const first = await source.round(1);
    if (!first || !roundHolds(chain, first))
      throw new Error(`round 1 is missing or not signed by chain ${chain.chainHash}`);
    logger.info(
      { beacon: url, chain: chain.chainHash },
      'randomness beacon reachable: new raffles mix in a drand round',
    );
    return { sales: { beacon: chain }, raffles: { beacon: source } };
  } catch (error) {
    logger.warn(
      { beacon: url, err: error instanceof Error ? error.message : String(error) },
      'no randomness beacon reachable: new raffles are commit–reveal only (weaker: the operator knows the seed)',
    );
    return { raffles: { beacon: source } };
  }
}
