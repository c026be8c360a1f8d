import { readFile } from 'node:fs/promises';
import { bls12_381 } from '@noble/curves/bls12-381.js';
import { QUICKNET, sameChain, type BeaconChain } from './beacon.js';

/**
 * A drand chain given by hand: its `/info` document (GET <relay>/<chain hash>/info), as drand
 * publishes it — `{ public_key, period, genesis_time, hash, schemeID, ... }` (groupHash and metadata
 * are read past). What makes a chain trustworthy is whose key it is, which this file cannot say:
 * whoever gives one (`raffle verify --trust-chain`, LOCKSTOCK_BEACON_CHAIN) vouches for it, and the
 * tools say so out loud. Quicknet (beacon.ts) stays the one chain trusted without being given.
 *
 * The chain hash is taken as its name, not recomputed (drand hashes the group file too, which /info
 * does not carry); the key, genesis and period — what decides which round a close fixes and who signs
 * it — are what is compared everywhere (sameChain). A file naming quicknet's hash with anything else
 * of its own is refused: it would pass for quicknet in what a reader sees.
 */
export function chainOfInfo(info: unknown, source = 'the chain info'): BeaconChain {
  const fail = (what: string, cause?: unknown) =>
    new TypeError(`${source} is not a drand chain's /info usable here: ${what}`, { cause });
  if (!info || typeof info !== 'object') throw fail('not a JSON object');
  const { public_key, period, genesis_time, hash, schemeID } = info as Record<string, unknown>;
  if (schemeID !== 'bls-unchained-g1-rfc9380') {
    throw fail(
      `schemeID ${JSON.stringify(schemeID)}: only bls-unchained-g1-rfc9380 (quicknet's) is spoken here`,
    );
  }
  if (typeof public_key !== 'string' || !/^[0-9a-f]{192}$/.test(public_key)) {
    throw fail('public_key is not a compressed G2 point (192 hex digits)');
  }
  try {
    bls12_381.G2.Point.fromHex(public_key).assertValidity();
  } catch (error) {
    throw fail('public_key is not a point of BLS12-381 G2', error);
  }
  if (typeof period !== 'number' || !Number.isSafeInteger(period) || period < 1) {
    throw fail('period is not a whole number of seconds');
  }
  if (typeof genesis_time !== 'number' || !Number.isSafeInteger(genesis_time) || genesis_time < 0) {
    throw fail('genesis_time is not Unix seconds');
  }
  if (typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash)) throw fail('hash is not 64 hex digits');
  const chain: BeaconChain = {
    chainHash: hash,
    publicKey: public_key,
    genesisTime: genesis_time,
    period,
    scheme: schemeID,
  };
  if (hash === QUICKNET.chainHash && !sameChain(chain, QUICKNET)) {
    throw fail("it names drand quicknet's chain hash with another key, genesis or period");
  }
  return chain;
}

/** Reads a drand `/info` file (chainOfInfo); an unreadable file or bad JSON says which. */
export async function readChainInfo(file: string): Promise<BeaconChain> {
  const text = await readFile(file, 'utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new TypeError(`${file} is not JSON: ${why}`, { cause: error });
  }
  return chainOfInfo(parsed, file);
}
