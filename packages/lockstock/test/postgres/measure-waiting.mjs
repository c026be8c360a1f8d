// Measures the two ways of waiting for a PostgreSQL advisory lock without polling that issue 25 asks
// to compare, with pg alone (no lockstock), on a private PostgreSQL:
//   queue  — each waiter tries, then blocks in pg_advisory_lock on its own connection (PostgreSQL's
//            lock queue), bounded by lock_timeout; the release is a plain pg_advisory_unlock;
//   notify — each waiter tries pg_try_advisory_lock, and on refusal waits for a NOTIFY on the lock's
//            channel (one LISTEN connection per process) or a recheck timer; the release unlocks and
//            NOTIFYs in one statement.
// For each: hand-offs per second between CONTENDERS contenders of one process, statements sent per
// hand-off, the hand-off latency (release → next holder's grant, p50/p99), and how long a waiter
// takes the lock after its holder's connection is terminated (no release, no NOTIFY).
// Run: node packages/lockstock/test/postgres/measure-waiting.mjs  (needs the built @lockstock/servers)
import pg from 'pg';
import { PostgresServer } from '@lockstock/servers';

const CONTENDERS = 8;
const HANDOFFS = 2_000;
const RECHECK_MS = 1_000; // the notify waiter's fallback for holders that vanish without a NOTIFY
const KEY = '4242';

const percentile = (values, p) => values.sort((a, b) => a - b)[Math.floor((values.length - 1) * p)];

async function connect(url) {
  const client = new pg.Client(url);
  await client.connect();
  return client;
}

/** `CONTENDERS` loops take and give back the lock until HANDOFFS grants; returns the figures. */
async function run(url, mode) {
  const clients = await Promise.all(Array.from({ length: CONTENDERS }, () => connect(url)));
  const listener = mode === 'notify' ? await connect(url) : undefined;
  const wakers = new Set();
  listener?.on('notification', () => wakers.forEach((wake) => wake()));
  await listener?.query('LISTEN lockstock_measure');
  let statements = 0;
  let grants = 0;
  let releasedAt = 0;
  const latencies = [];
  const query = (client, text) => (statements++, client.query(text));
  const acquire = async (client) => {
    if (mode === 'queue') {
      // As lockstock does: a try, then (refused) a wait in the queue bounded by lock_timeout.
      const { rows } = await query(client, `SELECT pg_try_advisory_lock(${KEY}) AS ok`);
      if (rows[0].ok) return;
      await query(
        client,
        `WITH t AS MATERIALIZED (SELECT set_config('lock_timeout', '10000', true)) SELECT pg_advisory_lock(${KEY}) FROM t`,
      );
      return;
    }
    for (;;) {
      let wake;
      const woken = new Promise((resolve) => wakers.add((wake = resolve)));
      const { rows } = await query(client, `SELECT pg_try_advisory_lock(${KEY}) AS ok`);
      if (rows[0].ok) {
        wakers.delete(wake);
        return;
      }
      const timer = setTimeout(wake, RECHECK_MS);
      await woken;
      clearTimeout(timer);
      wakers.delete(wake);
    }
  };
  const release = (client) =>
    mode === 'queue'
      ? query(client, `SELECT pg_advisory_unlock(${KEY})`)
      : query(client, `SELECT pg_advisory_unlock(${KEY}), pg_notify('lockstock_measure', '')`);
  const startedAt = performance.now();
  await Promise.all(
    clients.map(async (client) => {
      while (grants < HANDOFFS) {
        await acquire(client);
        if (releasedAt > 0) latencies.push(performance.now() - releasedAt);
        grants++;
        releasedAt = performance.now();
        await release(client);
      }
    }),
  );
  const seconds = (performance.now() - startedAt) / 1_000;
  // A holder terminated from the server side: no release, no NOTIFY.
  const [holder, waiter] = clients;
  await acquire(holder);
  const waiting = acquire(waiter).then(() => performance.now());
  await new Promise((resolve) => setTimeout(resolve, 100)); // the waiter is queued (or listening)
  const terminatedAt = performance.now();
  holder.on('error', () => undefined);
  await query(clients[2], `SELECT pg_terminate_backend(${holder.processID})`);
  const takeover = (await waiting) - terminatedAt;
  await release(waiter);
  await Promise.all([...clients.slice(1), ...(listener ? [listener] : [])].map((c) => c.end()));
  return {
    mode,
    handoffsPerSecond: Math.round(grants / seconds),
    statementsPerHandoff: +(statements / grants).toFixed(2),
    latencyMs: { p50: +percentile(latencies, 0.5).toFixed(2), p99: +percentile(latencies, 0.99).toFixed(2) },
    takeoverAfterTerminateMs: Math.round(takeover),
  };
}

const server = await PostgresServer.start();
try {
  const rows = [];
  for (const mode of ['queue', 'notify', 'queue', 'notify']) rows.push(await run(server.url, mode));
  console.log(JSON.stringify(rows, null, 1));
} finally {
  await server.stop();
}
