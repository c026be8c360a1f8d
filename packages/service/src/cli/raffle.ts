import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { entryHash } from '../sale/raffle/keys.js';
import type { PublishedRaffle } from '../sale/raffle/raffles.js';
import { verifyRaffle } from '../sale/raffle/verify.js';

/**
 * `lockstock raffle verify`: checks a raffle sale's draw from its published data alone — the running
 * service's GET /api/sales/:id/raffle/entries, or that document saved to a file — and exits 0 when
 * the draw is the one the seed gives, 1 when it is not (or not drawn yet), 2 when the data cannot be
 * read.
 */
export function registerRaffle(program: Command): void {
  const raffle = program.command('raffle').description('raffle sales: verify a draw from its published data');
  raffle
    .command('verify')
    .description(
      "recompute a raffle's draw from its published seed and entries (hashed ids) and check it against the published places and winners",
    )
    .argument(
      '<source>',
      'a service URL (http://host:port) with --sale, or a file of GET /api/sales/:id/raffle/entries',
    )
    .option('--sale <id>', 'the sale id (with a URL)')
    .option(
      '--user <id>',
      'also say where this user\'s entry is (its hash is SHA-256 of "<sale id>:<user id>")',
    )
    .action(async (source: string, options: { sale?: string; user?: string }) => {
      let data: PublishedRaffle;
      try {
        data = await readPublished(source, options.sale);
      } catch (error) {
        process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exit(2);
      }
      const hash = options.user === undefined ? undefined : entryHash(data.saleId, options.user);
      const verdict = verifyRaffle(data, hash);
      for (const check of verdict.checks)
        process.stdout.write(`${check.ok ? 'ok  ' : 'FAIL'} ${check.line}\n`);
      if (options.user !== undefined) {
        process.stdout.write(
          verdict.entry
            ? `user ${options.user}: place ${verdict.entry.position}, ${verdict.entry.won ? 'given a unit' : 'not given a unit'}\n`
            : `user ${options.user}: no entry (hash ${hash})\n`,
        );
      }
      process.stdout.write(
        verdict.ok ? `verified: raffle ${data.saleId}'s draw is the one its seed gives\n` : `NOT verified\n`,
      );
      process.exitCode = verdict.ok ? 0 : 1;
    });
}

async function readPublished(source: string, saleId: string | undefined): Promise<PublishedRaffle> {
  if (/^https?:\/\//.test(source)) {
    if (!saleId) throw new Error('with a URL, say which sale: --sale <id>');
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
