/**
 * A small SVG line-plot writer for the benchmarks' curves (docs/img/*.svg): one plot, a few series,
 * a logarithmic x axis (the curves run over decades: 1 … 100,000) and a linear or logarithmic y axis.
 * Written by hand so the plots need no dependency; the output is plain SVG 1.1 text that GitHub and
 * browsers render as an image.
 */

export interface Series {
  label: string;
  /** [x, y] points; a point with a y of null or not finite (not measured) is left out. */
  points: ReadonlyArray<readonly [number, number | null]>;
}

export interface PlotOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly Series[];
  /** A log y axis (values spanning decades). @default false */
  logY?: boolean;
  width?: number;
  height?: number;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];
const MARGIN = { left: 72, right: 16, top: 36, bottom: 72 };

/** Escapes text for SVG character data and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A tick label: 1,000 as "1k", 100,000 as "100k", 2.5 as "2.5". */
export function tickLabel(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 1e9) return `${trim(value / 1e9)}G`;
  if (abs >= 1e6) return `${trim(value / 1e6)}M`;
  if (abs >= 1e3) return `${trim(value / 1e3)}k`;
  return trim(value);
}

const trim = (value: number) => String(Number(value.toPrecision(3)));

/** Linear ticks: about five round steps (1, 2 or 5 × 10^n) from 0 or the minimum to past the maximum. */
function linearTicks(min: number, max: number): number[] {
  const span = max - min || Math.abs(max) || 1;
  const raw = span / 5;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * power >= raw) ?? 10) * power;
  const ticks: number[] = [];
  for (let t = Math.floor(min / step) * step; t <= max + step * 1e-9; t += step)
    ticks.push(Number(t.toPrecision(12)));
  if ((ticks.at(-1) ?? 0) < max) ticks.push((ticks.at(-1) ?? 0) + step);
  return ticks;
}

/** Decade ticks 10^a … 10^b covering [min, max] (both > 0). */
function logTicks(min: number, max: number): number[] {
  const ticks: number[] = [];
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) ticks.push(10 ** e);
  return ticks;
}

/** The plot as an SVG document. Throws when no series has a point to draw. */
export function linePlot(options: PlotOptions): string {
  const width = options.width ?? 640;
  const height = options.height ?? 400;
  const series = options.series.map((s) => ({
    label: s.label,
    points: s.points.filter(
      (p): p is readonly [number, number] =>
        p[1] !== null && Number.isFinite(p[1]) && p[0] > 0 && (!options.logY || p[1] > 0),
    ),
  }));
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) throw new Error(`plot "${options.title}": no point to draw`);
  const xs = logTicks(Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0])));
  const yMin = Math.min(...all.map((p) => p[1]));
  const yMax = Math.max(...all.map((p) => p[1]));
  const ys = options.logY ? logTicks(yMin, yMax) : linearTicks(Math.min(0, yMin), yMax);
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const [x0, x1] = [Math.log10(xs[0]!), Math.log10(xs.at(-1)!)];
  const yScale = (v: number) => (options.logY ? Math.log10(v) : v);
  const [y0, y1] = [yScale(ys[0]!), yScale(ys.at(-1)!)];
  const px = (x: number) => MARGIN.left + ((Math.log10(x) - x0) / (x1 - x0 || 1)) * plotW;
  const py = (y: number) => MARGIN.top + plotH - ((yScale(y) - y0) / (y1 - y0 || 1)) * plotH;
  const f = (n: number) => n.toFixed(1);

  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14">${escapeXml(options.title)}</text>`,
  ];
  for (const x of xs) {
    out.push(
      `<line x1="${f(px(x))}" y1="${MARGIN.top}" x2="${f(px(x))}" y2="${MARGIN.top + plotH}" stroke="#dddddd"/>`,
      `<text x="${f(px(x))}" y="${MARGIN.top + plotH + 16}" text-anchor="middle">${tickLabel(x)}</text>`,
    );
  }
  for (const y of ys) {
    out.push(
      `<line x1="${MARGIN.left}" y1="${f(py(y))}" x2="${MARGIN.left + plotW}" y2="${f(py(y))}" stroke="#dddddd"/>`,
      `<text x="${MARGIN.left - 6}" y="${f(py(y) + 4)}" text-anchor="end">${tickLabel(y)}</text>`,
    );
  }
  out.push(
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333333"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${MARGIN.top + plotH + 36}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
    `<text x="16" y="${MARGIN.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 16 ${MARGIN.top + plotH / 2})">${escapeXml(options.yLabel)}</text>`,
  );
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    if (s.points.length > 0) {
      const d = s.points.map((p, j) => `${j === 0 ? 'M' : 'L'}${f(px(p[0]))},${f(py(p[1]))}`).join(' ');
      out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"/>`);
      for (const p of s.points)
        out.push(`<circle cx="${f(px(p[0]))}" cy="${f(py(p[1]))}" r="3" fill="${color}"/>`);
    }
    const ly = height - 14;
    const lx = MARGIN.left + i * 150;
    out.push(
      `<line x1="${lx}" y1="${ly - 4}" x2="${lx + 20}" y2="${ly - 4}" stroke="${color}" stroke-width="2"/>`,
      `<text x="${lx + 26}" y="${ly}">${escapeXml(s.label)}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
