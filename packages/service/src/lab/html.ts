import type { RunResult } from './checker.js';
import { fairnessHtml } from './fairness/lab.js';
import type { FairnessRow } from './fairness/run.js';
import { describeMeta, type LabMeta } from './meta.js';
import { verdict, type StrategySummary } from './report.js';

const escape = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );

interface Series {
  label: string;
  color: string;
  values: number[];
}

/** A horizontal bar chart as inline SVG (one row per strategy, one bar per series). */
function barChart(id: string, title: string, labels: string[], series: Series[], unit: string): string {
  const row = 14 * series.length + 10;
  const left = 210;
  const width = 760;
  const height = labels.length * row + 40;
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  const scale = (v: number) => ((width - left - 70) * v) / max;
  const bars = labels
    .map((label, i) => {
      const y = 30 + i * row;
      const group = series
        .map((s, j) => {
          const v = s.values[i] ?? 0;
          const by = y + j * 14;
          return (
            `<rect class="bar" data-series="${escape(s.label)}" x="${left}" y="${by}" width="${scale(v).toFixed(1)}" height="12" fill="${s.color}"><title>${escape(label)} — ${escape(s.label)}: ${v} ${unit}</title></rect>` +
            `<text x="${left + scale(v) + 4}" y="${by + 10}" font-size="10">${v}</text>`
          );
        })
        .join('');
      return `<text x="${left - 6}" y="${y + 10}" text-anchor="end" font-size="11">${escape(label)}</text>${group}`;
    })
    .join('');
  const legend = series
    .map(
      (s, j) =>
        `<rect x="${left + j * 120}" y="6" width="10" height="10" fill="${s.color}"/><text x="${left + j * 120 + 14}" y="15" font-size="11">${escape(s.label)}</text>`,
    )
    .join('');
  return `<figure id="${id}"><figcaption>${escape(title)}</figcaption><svg class="chart" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">${legend}${bars}</svg></figure>`;
}

/**
 * The lock-based sale under each lock backend, side by side (the same body, so the rows differ by
 * the lock alone): only when the lab ran two or more of them.
 */
function lockCharts(summaries: StrategySummary[]): string[] {
  const locks = summaries.filter((s) => s.lockBackend !== undefined);
  if (locks.length < 2) return [];
  const labels = locks.map((s) => s.lockBackend ?? s.strategy);
  return [
    barChart(
      'chart-locks',
      'One lock-based sale on each lock backend: attempts per second (median of runs)',
      labels,
      [{ label: 'attempts/s', color: '#00798c', values: locks.map((s) => s.throughputPerSec) }],
      '/s',
    ),
    barChart(
      'chart-locks-latency',
      'The same, latency of one purchase attempt (median of runs)',
      labels,
      [
        { label: 'p50 ms', color: '#30638e', values: locks.map((s) => s.p50) },
        { label: 'p99 ms', color: '#003d5b', values: locks.map((s) => s.p99) },
      ],
      'ms',
    ),
  ];
}

/** When, with what and on what the lab ran, and the command's parameters. */
function metaBlock(meta: LabMeta): string {
  const parameters = Object.entries(meta.parameters)
    .map(([name, value]) => `${name}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(', ');
  return `<p class="meta" id="meta"><time datetime="${escape(meta.date)}">${escape(describeMeta(meta))}</time><br>
<code>${escape(meta.command)}</code>: ${escape(parameters)}</p>`;
}

/** A self-contained report: charts of oversell, throughput and latency, and a paragraph per strategy. */
export function renderHtmlReport(
  summaries: StrategySummary[],
  results: RunResult[],
  settings: { stock: number; buyers: number; processes: number; concurrency: number },
  meta?: LabMeta,
  fairness?: readonly FairnessRow[],
): string {
  const labels = summaries.map((s) => s.strategy);
  const names = (list: StrategySummary[]) => escape(list.map((s) => s.strategy).join(', ') || 'none');
  const broken = summaries.filter((s) => s.oversold > 0 || s.duplicateBuyers > 0);
  const belowZeroOnly = summaries.filter((s) => s.negativeStockRuns > 0 && s.oversold === 0);
  const unsold = summaries.filter((s) => s.unsold > 0 && s.oversold === 0);
  const surprises = summaries.filter((s) => !s.asExpected);
  const charts = [
    barChart(
      'chart-oversold',
      'Units oversold and left unsold (all runs), lowest stock counter below zero',
      labels,
      [
        { label: 'oversold', color: '#d1495b', values: summaries.map((s) => s.oversold) },
        {
          label: 'below zero',
          color: '#edae49',
          values: summaries.map((s) => Math.max(0, -s.minFinalStock)),
        },
        { label: 'unsold', color: '#8d99ae', values: summaries.map((s) => s.unsold) },
      ],
      'units',
    ),
    barChart(
      'chart-throughput',
      'Purchase attempts per second (median of runs)',
      labels,
      [{ label: 'attempts/s', color: '#00798c', values: summaries.map((s) => s.throughputPerSec) }],
      '/s',
    ),
    barChart(
      'chart-latency',
      'Latency of one purchase attempt (median of runs)',
      labels,
      [
        { label: 'p50 ms', color: '#30638e', values: summaries.map((s) => s.p50) },
        { label: 'p99 ms', color: '#003d5b', values: summaries.map((s) => s.p99) },
      ],
      'ms',
    ),
    ...lockCharts(summaries),
  ].join('\n');
  const paragraphs = summaries
    .map(
      (
        s,
      ) => `<section class="strategy ${s.oversold > 0 || s.negativeStockRuns > 0 ? 'bad' : s.errors > 0 || s.unsold > 0 ? 'warn' : 'good'}">
  <h3>${escape(s.strategy)} <small>${escape(s.title)}</small></h3>
  <p><b>The claim:</b> ${escape(s.claim)}</p>
  ${s.note ? `<p><b>Our take:</b> ${escape(s.note)}</p>` : ''}
  <p><b>The run:</b> ${escape(verdict(s))} — ${s.throughputPerSec} attempts/s, p50 ${s.p50} ms, p99 ${s.p99} ms over ${s.runs} run(s). ${s.asExpected ? 'As claimed.' : '<b>Not as claimed</b> (expected: ' + escape(s.expectation.replaceAll('_', ' ')) + ').'}</p>
</section>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>lockstock lab report</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; max-width: 900px; margin: 2em auto; color: #222; }
h1 { margin-bottom: 0.2em; } figure { margin: 1.5em 0; } figcaption { font-weight: 600; margin-bottom: 0.4em; }
section.strategy { border-left: 4px solid #ccc; padding: 0.2em 0.9em; margin: 0.8em 0; }
section.bad { border-color: #d1495b; } section.warn { border-color: #edae49; } section.good { border-color: #2a9d8f; }
table.fairness { border-collapse: collapse; } table.fairness td, table.fairness th { border: 1px solid #ddd; padding: 0.3em 0.6em; text-align: right; } table.fairness td:first-child { text-align: left; }
h3 small { font-weight: normal; color: #666; } .meta { color: #555; font-size: 12px; } .summary { background: #f6f6f6; padding: 0.6em 0.9em; }
</style></head><body>
<h1>Who oversells?</h1>
${meta ? metaBlock(meta) : ''}
<p class="sources">The strategies are the flash-sale and distributed-lock designs common in blog posts and tutorials (a lost-update demo, database locking tutorials, Redis and ZooKeeper lock write-ups, Redlock and its critics), broken ones included, with lockstock's own sale and locks beside them. Each paragraph below gives the claim (what those posts say of the design, or what lockstock says of its own) and what the run showed.</p>
<p class="summary">${settings.stock} units, ${settings.buyers} buyers, ${settings.processes} processes × ${settings.concurrency} concurrent buyers, ${results.length} runs in all.
${broken.length} of ${summaries.length} strategies oversold: ${names(broken)}.
${unsold.length > 0 ? `Left stock unsold although buyers wanted it: ${names(unsold)}.` : ''}
${belowZeroOnly.length > 0 ? `A counter below zero without overselling: ${names(belowZeroOnly)}.` : ''}
${surprises.length === 0 ? 'Every strategy behaved as claimed.' : `<b>Not as claimed:</b> ${names(surprises)}.`}
Everything below is counted from what was recorded (orders, final stock), not from what the strategies believed.</p>
${charts}
<h2>Strategy by strategy</h2>
${paragraphs}
${fairness ? fairnessHtml(fairness) : ''}
</body></html>
`;
}
