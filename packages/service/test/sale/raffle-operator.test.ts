import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SnowflakeIdGenerator } from '../../src/sale/ids/snowflake.js';
import { entryHash, raffleQueries } from '../../src/sale/raffle/keys.js';
import { merkleRoot } from '../../src/sale/raffle/merkle.js';
import { RaffleService, type PublishedRaffle } from '../../src/sale/raffle/raffles.js';
import type { ClosePayload, CloseStatement, EntryReceipt } from '../../src/sale/raffle/signing.js';
import { drawOrder, verifyRaffle } from '../../src/sale/raffle/verify.js';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

// Issue 44: the adversary is the operator, who holds the record and the signing key. Each test draws
// a raffle honestly, then edits the record after the close as an operator could (SQL, and a close
// statement signed again with the service's own key where that helps them), lets the service serve
// and publish the result, and checks it with what an entrant holds apart from the published document:
// their receipt (and, for a list signed again, the close statement a watcher saved at the close).
// Each edit leaves a document that vouches for itself (verified against its own seedHash and key).

const env = useSaleStack();
let raffles: RaffleService;
let ids: SnowflakeIdGenerator;
beforeAll(async () => {
  const instance = await env.instance();
  ids = new SnowflakeIdGenerator(instance.context);
  await ids.start();
  raffles = new RaffleService({ context: instance.context, db: instance.db, nextOrderId: () => ids.next() });
  env.pipeline().start();
});
afterAll(() => ids.stop());

const ENTRANTS = 12;
const STOCK = 3;

interface Drawn {
  saleId: string;
  /** Entrants in draw order (place 1 first), as drawn honestly. */
  users: string[];
  receipts: Map<string, EntryReceipt>;
  seed: string;
  /** The close statement as published at the close (what a watcher saved then). */
  savedClose: CloseStatement;
}

/** A raffle of ENTRANTS entries, each with its receipt, drawn honestly (not served yet). */
async function drawnRaffle(tag: string): Promise<Drawn> {
  const sale = await env.service.createSale({
    name: `operator ${tag}`,
    stock: STOCK,
    admission: 'raffle',
    drawAt: new Date(Date.now() + 3_600_000),
    endsAt: new Date(Date.now() + 7_200_000),
  });
  const entrants = Array.from({ length: ENTRANTS }, (_, i) => `${tag}-${i}`);
  const receipts = new Map<string, EntryReceipt>();
  for (const user of entrants) {
    const entered = await raffles.enter(sale.id, user);
    expect(entered.ok).toBe(true);
    receipts.set(user, (await raffles.receipt(sale.id, entryHash(sale.id, user)))!);
  }
  expect((await raffles.drawNow(sale.id)).result).toBe('drawn');
  const published = (await raffles.published(sale.id))!;
  const { rows } = await env.db.query<{ user_id: string }>(
    'SELECT user_id FROM raffle_places WHERE sale_id = $1 ORDER BY place',
    [sale.id],
  );
  return {
    saleId: sale.id,
    users: rows.map((r) => r.user_id),
    receipts,
    seed: published.seed!,
    savedClose: published.close!,
  };
}

/** The operator recomputes every place from the record as it now stands (the service's own SQL). */
async function redraw(saleId: string): Promise<void> {
  await env.db.query('DELETE FROM raffle_place_blocks WHERE sale_id = $1', [saleId]);
  const { rows } = await env.db.query<{ seed: Buffer }>('SELECT seed FROM raffles WHERE sale_id = $1', [
    saleId,
  ]);
  await env.db.query(raffleQueries.drawOrder, [saleId, rows[0]!.seed]);
}

/** The operator signs a new close statement with the service's key and records it. */
async function resign(saleId: string, change: (payload: ClosePayload) => ClosePayload): Promise<void> {
  const { rows } = await env.db.query<{ close: CloseStatement }>(
    'SELECT close FROM raffles WHERE sale_id = $1',
    [saleId],
  );
  const close = await raffles.signer.sign(change(rows[0]!.close.payload));
  await env.db.query('UPDATE raffles SET close = $2 WHERE sale_id = $1', [saleId, JSON.stringify(close)]);
}

/** The operator replaces the seed and its hash in the record. */
async function rewriteSeed(saleId: string, seed: Buffer): Promise<string> {
  const seedHash = createHash('sha256').update(seed).digest('hex');
  await env.db.query('UPDATE raffles SET seed = $2, seed_hash = $3 WHERE sale_id = $1', [
    saleId,
    seed,
    seedHash,
  ]);
  return seedHash;
}

/** A seed that puts `target` first among `hashes` (the operator grinds: ~ENTRANTS tries). */
function groundSeed(hashes: readonly string[], target: string): Buffer {
  for (;;) {
    const seed = randomBytes(32);
    if (drawOrder(seed.toString('hex'), hashes)[0] === target) return seed;
  }
}

/** The service serves the (edited) draw order; published once the winners are recorded. */
async function serveAndPublish(saleId: string): Promise<PublishedRaffle> {
  await until('the winners recorded', async () => {
    await raffles.serve(saleId);
    const { rows } = await env.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM purchases WHERE sale_id = $1',
      [saleId],
    );
    return rows[0]?.n === STOCK;
  });
  return (await raffles.published(saleId))!;
}

/** Users given a unit, as the record has it. */
async function unitHolders(saleId: string): Promise<string[]> {
  const { rows } = await env.db.query<{ user_id: string }>(
    'SELECT user_id FROM purchases WHERE sale_id = $1 ORDER BY user_id',
    [saleId],
  );
  return rows.map((r) => r.user_id);
}

/** The document checked against itself (its own seedHash and key) passes: it alone shows nothing. */
function expectSelfConsistent(published: PublishedRaffle): void {
  const circular = verifyRaffle(published, {
    seedHash: published.seedHash,
    publicKey: published.key!.publicKey,
  });
  expect(circular.checks.filter((c) => !c.ok)).toEqual([]);
}

const failures = (published: PublishedRaffle, inputs: Parameters<typeof verifyRaffle>[1]) => {
  const verdict = verifyRaffle(published, inputs);
  expect(verdict.ok).toBe(false);
  return verdict.checks.filter((c) => !c.ok).map((c) => c.line);
};

describe('raffle verify against an operator who edits the record after the close', () => {
  it('catches the seed and its hash rewritten, the places recomputed and the close signed again', async () => {
    const drawn = await drawnRaffle('seed');
    const seedHash = await rewriteSeed(drawn.saleId, randomBytes(32));
    await redraw(drawn.saleId);
    await resign(drawn.saleId, (p) => ({ ...p, commitment: { ...p.commitment, seedHash } }));
    const published = await serveAndPublish(drawn.saleId);
    expect(await unitHolders(drawn.saleId)).not.toEqual([...drawn.users.slice(0, STOCK)].sort());
    expectSelfConsistent(published);

    // Any entrant's receipt holds the seed hash committed to before the first entry.
    const honest = drawn.receipts.get(drawn.users[5]!)!;
    expect(failures(published, { receipt: honest })).toEqual([
      expect.stringContaining("the close statement's commitment"),
      expect.stringContaining('does NOT match the commitment'),
    ]);
  });

  it('catches an entry deleted, the places renumbered and the close signed again without it', async () => {
    const drawn = await drawnRaffle('deleted');
    const victim = drawn.users[0]!; // place 1: a unit
    await env.db.query('DELETE FROM raffle_place_blocks WHERE sale_id = $1', [drawn.saleId]);
    await env.db.query('DELETE FROM raffle_entries WHERE sale_id = $1 AND user_id = $2', [
      drawn.saleId,
      victim,
    ]);
    await redraw(drawn.saleId);
    const rest = drawn.users.slice(1).map((u) => entryHash(drawn.saleId, u));
    await resign(drawn.saleId, (p) => ({ ...p, entries: rest.length, root: merkleRoot(rest) }));
    const published = await serveAndPublish(drawn.saleId);
    expect(await unitHolders(drawn.saleId)).not.toContain(victim);
    expectSelfConsistent(published);

    expect(failures(published, { receipt: drawn.receipts.get(victim)! })).toEqual([
      expect.stringContaining('is NOT in the list although its receipt shows it was accepted: dropped'),
    ]);
    // The close statement saved at the close catches it for anyone, the victim or not.
    expect(
      failures(published, { receipt: drawn.receipts.get(drawn.users[7]!)!, savedClose: drawn.savedClose }),
    ).toEqual([expect.stringContaining('is NOT the one saved at the close')]);
  });

  it('catches an entry added after the close (ground to sort first), with or without a close signed again', async () => {
    const drawn = await drawnRaffle('added');
    const hashes = drawn.users.map((u) => entryHash(drawn.saleId, u));
    let friend = '';
    for (let i = 0; !friend; i++) {
      const hash = entryHash(drawn.saleId, `friend-${i}`);
      if (drawOrder(drawn.seed, [...hashes, hash])[0] === hash) friend = `friend-${i}`;
    }
    await env.db.query(
      'INSERT INTO raffle_entries (sale_id, user_id, entry_hash, entered_at) VALUES ($1, $2, $3, now())',
      [drawn.saleId, friend, entryHash(drawn.saleId, friend)],
    );
    await redraw(drawn.saleId);
    let published = await serveAndPublish(drawn.saleId);
    expect(await unitHolders(drawn.saleId)).toContain(friend);
    const honest = drawn.receipts.get(drawn.users[3]!)!;
    expect(failures(published, { receipt: honest })).toEqual([
      expect.stringContaining('is NOT the one signed at the close'),
    ]);

    // The operator signs the longer list again: the list then matches its statement, and only the
    // statement saved at the close shows that two were signed.
    const all = [...hashes, entryHash(drawn.saleId, friend)];
    await resign(drawn.saleId, (p) => ({ ...p, entries: all.length, root: merkleRoot(all) }));
    published = (await raffles.published(drawn.saleId))!;
    expectSelfConsistent(published);
    expect(failures(published, { receipt: honest, savedClose: drawn.savedClose })).toEqual([
      expect.stringContaining('is NOT the one saved at the close'),
    ]);
  });

  it('catches the place list reordered for one entrant, with a seed ground to match and its hash rewritten', async () => {
    const drawn = await drawnRaffle('reordered');
    const favoured = drawn.users[ENTRANTS - 1]!; // drawn last
    const hashes = drawn.users.map((u) => entryHash(drawn.saleId, u));
    const seedHash = await rewriteSeed(drawn.saleId, groundSeed(hashes, entryHash(drawn.saleId, favoured)));
    await redraw(drawn.saleId);
    await resign(drawn.saleId, (p) => ({ ...p, commitment: { ...p.commitment, seedHash } }));
    const published = await serveAndPublish(drawn.saleId);
    expect(published.entries[0]).toMatchObject({ hash: entryHash(drawn.saleId, favoured), position: 1 });
    expect(await unitHolders(drawn.saleId)).toContain(favoured);
    expectSelfConsistent(published);

    // The favoured entrant's own receipt, and anyone else's, holds the seed hash of before.
    for (const user of [favoured, drawn.users[0]!]) {
      expect(failures(published, { receipt: drawn.receipts.get(user)! })).toEqual([
        expect.stringContaining("the close statement's commitment"),
        expect.stringContaining('does NOT match the commitment'),
      ]);
    }
  });
});
