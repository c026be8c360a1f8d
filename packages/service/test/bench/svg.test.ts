import { describe, expect, it } from 'vitest';
import { escapeXml, linePlot, tickLabel } from '../../src/bench/svg.js';

const count = (text: string, pattern: RegExp) => (text.match(pattern) ?? []).length;

describe('the SVG line-plot writer', () => {
  const svg = linePlot({
    title: 'throughput <per> lock & "store"',
    xLabel: 'waiters',
    yLabel: 'sections/s',
    series: [
      {
        label: 'Redis',
        points: [
          [1, 900],
          [10, 950],
          [100, 800],
          [1000, 400],
        ],
      },
      {
        label: 'etcd',
        points: [
          [1, 300],
          [10, null],
          [100, 250],
        ],
      },
    ],
  });

  it('writes one SVG document: a path per series through its measured points, a marker per point', () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(count(svg, /<path /g)).toBe(2);
    expect(count(svg, /<circle /g)).toBe(4 + 2); // the null point is left out
    const paths = [...svg.matchAll(/<path d="([^"]+)"/g)].map((m) => m[1]!.split(' ').length);
    expect(paths).toEqual([4, 2]);
  });

  it('escapes text, labels decade ticks on the log x axis, and keeps every point inside the frame', () => {
    expect(svg).toContain('throughput &#60;per&#62; lock &#38; &#34;store&#34;');
    for (const tick of ['>1<', '>10<', '>100<', '>1k<']) expect(svg).toContain(tick);
    const frame = /<rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)" fill="none"/.exec(svg)!;
    const [x, y, w, h] = frame.slice(1).map(Number) as [number, number, number, number];
    for (const m of svg.matchAll(/<circle cx="([\d.]+)" cy="([\d.]+)"/g)) {
      const [cx, cy] = [Number(m[1]), Number(m[2])];
      expect(cx).toBeGreaterThanOrEqual(x);
      expect(cx).toBeLessThanOrEqual(x + w);
      expect(cy).toBeGreaterThanOrEqual(y);
      expect(cy).toBeLessThanOrEqual(y + h);
    }
    // Higher values are drawn higher (smaller y): 950 above 400 in the first series.
    const ys = [...svg.matchAll(/<circle cx="[\d.]+" cy="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(ys[1]!).toBeLessThan(ys[3]!);
  });

  it('refuses a plot with nothing to draw; formats ticks and escapes', () => {
    expect(() =>
      linePlot({ title: 't', xLabel: 'x', yLabel: 'y', series: [{ label: 's', points: [[1, null]] }] }),
    ).toThrow(/no point/);
    expect([1, 1000, 100_000, 2_500_000, 0.5].map(tickLabel)).toEqual(['1', '1k', '100k', '2.5M', '0.5']);
    expect(escapeXml(`<a b="c">'`)).toBe('&#60;a b=&#34;c&#34;&#62;&#39;');
  });
});
