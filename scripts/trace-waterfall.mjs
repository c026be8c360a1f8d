// Draws the spans of one trace as a waterfall (SVG), as a tracing UI shows them:
// `node scripts/trace-waterfall.mjs <spans.json> <out.svg> [title]`. The spans are OTLP/JSON spans
// (what test/cli/tracing.test.ts's receiver got, written with LOCKSTOCK_TRACE_OUT=<file>), with the
// `service` and `role` the test adds from each span's resource.
import { readFileSync, writeFileSync } from 'node:fs';

const [input, output, title = 'One purchase, traced'] = process.argv.slice(2);
if (!input || !output) {
  process.stderr.write('usage: node scripts/trace-waterfall.mjs <spans.json> <out.svg> [title]\n');
  process.exit(2);
}
const spans = JSON.parse(readFileSync(input, 'utf8'));
const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];
const ns = (s) => BigInt(s);
const t0 = spans.reduce(
  (min, s) => (ns(s.startTimeUnixNano) < min ? ns(s.startTimeUnixNano) : min),
  ns(spans[0].startTimeUnixNano),
);
const t1 = spans.reduce((max, s) => (ns(s.endTimeUnixNano) > max ? ns(s.endTimeUnixNano) : max), 0n);
const total = Number(t1 - t0) / 1e6; // ms

// Depth-first from the roots (a parent not in the trace counts as none: the buyer's own client span).
const ids = new Set(spans.map((s) => s.spanId));
const children = new Map();
for (const s of spans) {
  const parent = s.parentSpanId && ids.has(s.parentSpanId) ? s.parentSpanId : '';
  children.set(parent, [...(children.get(parent) ?? []), s]);
}
const rows = [];
const walk = (parent, depth) => {
  for (const s of (children.get(parent) ?? []).sort((a, b) =>
    ns(a.startTimeUnixNano) < ns(b.startTimeUnixNano) ? -1 : 1,
  )) {
    rows.push({ s, depth });
    walk(s.spanId, depth + 1);
  }
};
walk('', 0);

const attr = (s, key) => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v === undefined ? undefined : Object.values(v)[0];
};
const esc = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const W = 960,
  LABEL = 360,
  ROW = 34,
  TOP = 64,
  BAR = LABEL + 10,
  BARW = W - BAR - 80;
const colours = {
  http: '#4e79a7',
  records: '#59a14f',
  orders: '#59a14f',
  app: '#4e79a7',
  lockstock: '#f28e2b',
  '': '#9c755f',
};
const lines = [
  `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${TOP + rows.length * ROW + 40}" font-family="system-ui, sans-serif" font-size="13">`,
  `<rect width="100%" height="100%" fill="#fff"/>`,
  `<text x="16" y="26" font-size="16" font-weight="600">${esc(title)}</text>`,
  `<text x="16" y="46" fill="#555">trace ${esc(spans[0].traceId)} · ${total.toFixed(1)} ms · ${spans.length} spans · service ${esc(spans[0].service ?? '')}</text>`,
];
for (let i = 0; i <= 4; i++) {
  const x = BAR + (BARW * i) / 4;
  lines.push(`<line x1="${x}" y1="${TOP - 6}" x2="${x}" y2="${TOP + rows.length * ROW}" stroke="#eee"/>`);
  lines.push(
    `<text x="${x}" y="${TOP - 10}" fill="#888" font-size="11" text-anchor="middle">${((total * i) / 4).toFixed(1)} ms</text>`,
  );
}
rows.forEach(({ s, depth }, i) => {
  const y = TOP + i * ROW;
  const start = Number(ns(s.startTimeUnixNano) - t0) / 1e6;
  const ms = Number(ns(s.endTimeUnixNano) - ns(s.startTimeUnixNano)) / 1e6;
  const x = BAR + (BARW * start) / total;
  const w = Math.max(2, (BARW * ms) / total);
  const outcome =
    attr(s, 'lockstock.outcome') ??
    attr(s, 'http.response.status_code') ??
    attr(s, 'lockstock.lock.outcome') ??
    attr(s, 'lockstock.lock.hold.ended');
  lines.push(`<text x="${16 + depth * 16}" y="${y + 15}">${esc(s.name)}</text>`);
  lines.push(
    `<text x="${16 + depth * 16}" y="${y + 28}" fill="#777" font-size="11">${esc(KINDS[s.kind] ?? s.kind)} · ${esc(s.role ?? '')}${outcome === undefined ? '' : ` · ${esc(outcome)}`}</text>`,
  );
  lines.push(
    `<rect x="${x.toFixed(1)}" y="${y + 6}" width="${w.toFixed(1)}" height="18" rx="3" fill="${colours[s.role ?? ''] ?? '#9c755f'}"/>`,
  );
  lines.push(
    `<text x="${(x + w + 6).toFixed(1)}" y="${y + 19}" fill="#333" font-size="11">${ms.toFixed(2)} ms</text>`,
  );
});
lines.push('</svg>');
writeFileSync(output, lines.join('\n') + '\n');
process.stdout.write(`wrote ${output}: ${rows.length} spans over ${total.toFixed(1)} ms\n`);
