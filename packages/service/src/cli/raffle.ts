import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { sameChain, type BeaconChain } from '../sale/raffle/beacon.js';
import { readChainInfo } from '../sale/raffle/chain-info.js';
import { entryHash } from '../sale/raffle/keys.js';
import type { PublishedRaffle } from '../sale/raffle/raffles.js';
import type { CloseStatement, EntryReceipt } from '../sale/raffle/signing.js';
import { verifyRaffle } from '../sale/raffle/verify.js';
import { TRUSTED_CHAINS } from '../sale/raffle/verify-beacon.js';

interface VerifyOptions {
  sale?: string;
  user?: string;
  receipt?: string;
  seedHash?: string;
  key?: string;
  close?: string;
  trustChain: string[];
}

/**
 * `lockstock raffle verify`: checks a raffle sale's draw from its published data — the running
 * service's GET /api/sales/:id/raffle/entries, or that document saved to a file — against a
 * commitment held apart from it: an entry receipt (`--receipt`) or a seed hash (`--seed-hash`), never
 * the document's own. A beacon draw's chain must be drand quicknet, or one given with `--trust-chain`
 * (said in a TRUST line: lockstock does not vouch for it). Exits 0 when the draw is the one committed to, 1 when it is not (or not drawn
 * yet, or nothing is held to check it against), 2 when the data cannot be read.
 */
export function registerRaffle(program: Command): void {
  const raffle = program.command('raffle').description('raffle sales: verify a draw from its published data');
  raffle
    .command('verify')
    .description(
      "check a raffle's published draw against your entry receipt (or a seed hash): the signed close statement, the seed, every place, the winners, your entry",
    )
    .argument(
      '<source>',
      'a service URL (http://host:port) with --sale (or --receipt), or a file of GET /api/sales/:id/raffle/entries',
    )
    .option('--sale <id>', 'the sale id (with a URL; else the receipt says)')
    .option(
      '--receipt <file>',
      'your entry receipt (the answer to POST /api/sales/:id/raffle/entries, or its receipt)',
    )
    .option('--seed-hash <hex>', 'the seed hash committed to, when you have no receipt')
    .option('--key <base64url>', "the service's public key (GET /.well-known/lockstock/raffle-key), pinned")
    .option(
      '--close <file>',
      'the close statement saved when the raffle closed (the "close" of GET /api/sales/:id/raffle/entries then)',
    )
    .option('--user <id>', 'also find this user\'s entry (its hash is SHA-256 of "<sale id>:<user id>")')
    .option(
      '--trust-chain <file>',
      "also trust this drand chain (its /info JSON: public_key, period, genesis_time, hash, schemeID) besides quicknet; only for a chain whose key you know is not the operator's (repeatable)",
      (file: string, files: string[]) => [...files, file],
      [] as string[],
    )
    .action(async (source: string, options: VerifyOptions) => {
      let data: PublishedRaffle;
      let receipt: EntryReceipt | undefined;
      let savedClose: CloseStatement | undefined;
      const handGiven: BeaconChain[] = [];
      try {
        for (const file of options.trustChain) handGiven.push(await readChainInfo(file));
        receipt = options.receipt === undefined ? undefined : await readReceipt(options.receipt);
        savedClose = options.close === undefined ? undefined : await readClose(options.close);
        data = await readPublished(source, options.sale ?? receipt?.payload.commitment.saleId);
      } catch (error) {
        process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exit(2);
      }
      handGiven.forEach((chain, i) => {
        const pinned = TRUSTED_CHAINS.some((c) => sameChain(c, chain));
        process.stdout.write(
          pinned
            ? `note ${options.trustChain[i]} is drand chain ${chain.chainHash}, pinned already\n`
            : `TRUST drand chain ${chain.chainHash} (key ${chain.publicKey.slice(0, 16)}…, genesis ${chain.genesisTime}, period ${chain.period} s) from ${options.trustChain[i]}, given by hand: NOT pinned by lockstock — a draw with it is only as fair as whoever holds its key\n`,
        );
      });
      const hash = options.user === undefined ? undefined : entryHash(data.saleId, options.user);
      const verdict = verifyRaffle(data, {
        ...(receipt ? { receipt } : {}),
        ...(options.seedHash === undefined ? {} : { seedHash: options.seedHash }),
        ...(options.key === undefined ? {} : { publicKey: options.key }),
        ...(savedClose ? { savedClose } : {}),
        ...(hash === undefined || receipt ? {} : { entryHash: hash }),
        trustedChains: [...TRUSTED_CHAINS, ...handGiven],
      });
      for (const check of verdict.checks)
        process.stdout.write(`${check.ok ? 'ok  ' : 'FAIL'} ${check.line}\n`);
      for (const note of verdict.notes) process.stdout.write(`note ${note}\n`);
      if (verdict.entry) {
        process.stdout.write(
          `${options.user === undefined ? 'your entry' : `user ${options.user}`}: place ${verdict.entry.position}, ${verdict.entry.won ? 'given a unit' : 'not given a unit'}\n`,
        );
      }
      process.stdout.write(
        verdict.ok ? `verified: raffle ${data.saleId}'s draw is the one committed to\n` : `NOT verified\n`,
      );
      process.exitCode = verdict.ok ? 0 : 1;
    });
}

async function readReceipt(file: string): Promise<EntryReceipt> {
  const parsed = JSON.parse(await readFile(file, 'utf8')) as { receipt?: unknown; payload?: unknown };
  const receipt = (parsed && typeof parsed === 'object' && 'receipt' in parsed ? parsed.receipt : parsed) as
    Partial<EntryReceipt> | undefined;
  const commitment = receipt?.payload?.commitment;
  if (!commitment || typeof commitment.saleId !== 'string' || typeof receipt.signature !== 'string') {
    throw new Error(`${file} is not an entry receipt (POST /api/sales/:id/raffle/entries)`);
  }
  return receipt as EntryReceipt;
}

async function readClose(file: string): Promise<CloseStatement> {
  const parsed = JSON.parse(await readFile(file, 'utf8')) as { close?: unknown; payload?: unknown };
  const close = (parsed && typeof parsed === 'object' && 'close' in parsed ? parsed.close : parsed) as
    Partial<CloseStatement> | undefined;
  if (close?.payload?.kind !== 'lockstock.raffle.close.v1') {
    throw new Error(`${file} is not a raffle close statement (nor a published raffle holding one)`);
  }
  return close as CloseStatement;
}

async function readPublished(source: string, saleId: string | undefined): Promise<PublishedRaffle> {
  if (/^https?:\/\//.test(source)) {
    if (!saleId) throw new Error('with a URL, say which sale: --sale <id> (or --receipt)');
    const url = new URL(`/api/sales/${encodeURIComponent(saleId)}/raffle/entries`, source);
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url.href} answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as PublishedRaffle;
  }
  const parsed = JSON.parse(await readFile(source, 'utf8')) as PublishedRaffle;
  if (!parsed || typeof parsed.saleId !== 'string' || !Array.isArray(parsed.entries)) {
    throw new Error(`${source} is not a published raffle (GET /api/sales/:id/raffle/entries)`);
  }
  return parsed;
}
