import { PostgresServer, RedisServer } from '@lockstock/servers';
import type { TableData } from '../../support/table.js';
import { connectLab, prepareLabDatabase } from '../env.js';
import { runFairness, type FairnessOptions, type FairnessRow } from './run.js';

/** The fairness row on the given servers, or on private ones started and stopped here. */
export async function runFairnessLab(
  options: FairnessOptions & { redisUrl?: string; databaseUrl?: string } = {},
): Promise<FairnessRow[]> {
  const redisServer = options.redisUrl ? undefined : await RedisServer.start();
  const postgres = options.databaseUrl ? undefined : await PostgresServer.start();
  let env: Awaited<ReturnType<typeof connectLab>> | undefined;
  try {
    env = await connectLab(
      options.redisUrl ?? (redisServer as RedisServer).url,
      options.databaseUrl ?? (postgres as PostgresServer).url,
      4,
    );
    await prepareLabDatabase(env);
    return await runFairness(env, options);
  } finally {
    await env?.close();
    await Promise.all([redisServer?.stop(), postgres?.stop()]);
  }
}

const percent = (share: number) => `${Math.round(share * 1000) / 10}%`;

/** The row as a table: one line per policy. */
export function fairnessTable(rows: readonly FairnessRow[], botShare = 0.1): TableData {
  const crowd = rows[0];
  const bots = crowd ? `${crowd.bots} of ${crowd.buyers} buyers` : percent(botShare);
  return {
    columns: [
      { header: 'policy' },
      { header: 'units sold', align: 'right' },
      { header: 'to bots', align: 'right' },
      { header: `bots' share of units (bots: ${bots})`, align: 'right' },
      { header: 'requests: bots / people', align: 'right' },
    ],
    rows: rows.map((r) => [
      r.policy,
      String(r.units),
      String(r.toBots),
      percent(r.botUnitShare),
      `${r.botRequests} / ${r.humanRequests}`,
    ]),
  };
}

const escape = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** The row as a section of the HTML lab report. */
export function fairnessHtml(rows: readonly FairnessRow[], botShare = 0.1): string {
  const table = fairnessTable(rows, botShare);
  const head = table.columns.map((c) => `<th>${escape(c.header)}</th>`).join('');
  const body = table.rows
    .map((row) => `<tr>${row.map((cell) => `<td>${escape(cell)}</td>`).join('')}</tr>`)
    .join('\n');
  return `<h2 id="fairness">Who gets the units?</h2>
<p>The same crowd under three admission policies: ${percent(botShare)} of the buyers are bots that fire within 10 ms of the opening and send ten times the requests of a person (people press “buy” 150–1,500 ms after the opening and try once more). Counted from the record (confirmed orders).
Under <b>first come</b> the fastest win; the <b>waiting room</b> orders everyone who arrives within its shuffle window at random and admits at a paced rate, so more requests buy no earlier place; the <b>raffle</b> takes one entry per buyer and draws.</p>
<table class="fairness"><thead><tr>${head}</tr></thead><tbody>
${body}
</tbody></table>`;
}
