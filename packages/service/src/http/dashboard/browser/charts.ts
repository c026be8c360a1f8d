import type { DashboardPoint, SalePoint } from '../schemas.js';
import { clock } from './format.js';
import { OUTCOME_ORDER, OUTCOMES } from './outcomes.js';

/** Points kept per chart: 10 minutes at one a second (the server's shared history keeps as many). */
export const MAX_POINTS = 600;
const HEIGHT = 150;
const AXIS = '#94a3b8';
const GRID = 'rgba(148, 163, 184, 0.12)';
const FONT = '11px system-ui, sans-serif';

const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

/** Time, the left `y` scale, and optionally a right-hand axis for a second scale. */
function axes(rightScale?: string): uPlot.Axis[] {
  const axis = (side: 1 | 3, scale: string): uPlot.Axis => ({
    scale,
    side,
    stroke: AXIS,
    font: FONT,
    size: 48,
    grid: { show: side === 3, stroke: GRID, width: 1 },
    ticks: { stroke: GRID, width: 1 },
    values: (_u, splits) => splits.map((v) => compact.format(v)),
  });
  const x: uPlot.Axis = {
    stroke: AXIS,
    font: FONT,
    grid: { stroke: GRID, width: 1 },
    ticks: { stroke: GRID },
    values: (_u, splits) => splits.map((s) => clock(s * 1000)),
  };
  return rightScale ? [x, axis(3, 'y'), axis(1, rightScale)] : [x, axis(3, 'y')];
}

function options(width: number, series: uPlot.Series[], extra: Partial<uPlot.Options> = {}): uPlot.Options {
  return {
    width,
    height: HEIGHT,
    legend: { show: false },
    cursor: { drag: { x: false, y: false }, points: { size: 6 } },
    scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
    axes: axes(),
    series: [{}, ...series.map((s) => ({ points: { show: false }, ...s }))],
    ...extra,
  };
}

/**
 * The three charts of a sale: stock left against units recorded and units returned (cancelled or
 * expired), attempts per second by outcome, and
 * the order pipeline's backlog and lag. The series live here; a tick appends one point to each.
 */
export class SaleCharts {
  private readonly t: number[] = [];
  private readonly remaining: Array<number | null> = [];
  private readonly recorded: number[] = [];
  private readonly returned: number[] = [];
  private readonly rates = OUTCOME_ORDER.map(() => [] as number[]);
  private readonly backlog: number[] = [];
  private readonly lagSeconds: Array<number | null> = [];
  private readonly plots: Array<{ plot: uPlot; data: () => uPlot.AlignedData; element: HTMLElement }> = [];
  private readonly observer: ResizeObserver;

  constructor(card: HTMLElement, stock: number) {
    const at = (name: string) => card.querySelector<HTMLElement>(`[data-chart="${name}"]`) as HTMLElement;
    this.add(
      at('stock'),
      options(
        0,
        [
          { label: 'stock left', stroke: '#60a5fa', fill: 'rgba(96, 165, 250, 0.18)', width: 2 },
          { label: 'units recorded', stroke: '#34d399', width: 2, dash: [6, 4] },
          { label: 'units returned', stroke: '#fbbf24', width: 2, dash: [2, 3] },
        ],
        { scales: { x: { time: true }, y: { range: [0, Math.max(1, stock)] } } },
      ),
      () => [this.t, this.remaining, this.recorded, this.returned],
    );
    // Drawn in reverse, so that `reserved` (the first outcome) is on top where lines overlap.
    this.add(
      at('rates'),
      options(
        0,
        [...OUTCOME_ORDER]
          .reverse()
          .map((o) => ({ label: OUTCOMES[o].label, stroke: OUTCOMES[o].color, width: 2 })),
      ),
      () => [this.t, ...[...this.rates].reverse()],
    );
    this.add(
      at('pipeline'),
      options(
        0,
        [
          { label: 'backlog (entries)', stroke: '#fb923c', fill: 'rgba(251, 146, 60, 0.15)', width: 2 },
          { label: 'lag (s)', stroke: '#f87171', width: 1.5, dash: [4, 4], scale: 'lag' },
        ],
        {
          axes: axes('lag'),
          scales: {
            x: { time: true },
            y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
            lag: { range: (_u, _min, max) => [0, Math.max(1, max)] },
          },
        },
      ),
      () => [this.t, this.backlog, this.lagSeconds],
    );
    this.observer = new ResizeObserver(() => this.resize());
    for (const { element } of this.plots) this.observer.observe(element);
  }

  private add(element: HTMLElement, opts: uPlot.Options, data: () => uPlot.AlignedData): void {
    const plot = new uPlot({ ...opts, width: Math.max(200, element.clientWidth) }, data(), element);
    this.plots.push({ plot, data, element });
  }

  /** Replaces the series with the server's history (on connect and on every reconnect). */
  load(saleId: string, points: readonly DashboardPoint[]): void {
    for (const series of [
      this.t,
      this.remaining,
      this.recorded,
      this.returned,
      this.backlog,
      this.lagSeconds,
      ...this.rates,
    ])
      series.length = 0;
    for (const point of points) {
      const sale = point.sales[saleId];
      if (sale) this.push(point.t, sale);
    }
    this.redraw();
  }

  append(t: number, point: SalePoint): void {
    if (this.t.length > 0 && t <= (this.t[this.t.length - 1] as number) * 1000) return; // already shown
    this.push(t, point);
    this.redraw();
  }

  destroy(): void {
    this.observer.disconnect();
    for (const { plot } of this.plots) plot.destroy();
  }

  private push(t: number, point: SalePoint): void {
    this.t.push(t / 1000); // uPlot's time scale is in seconds
    this.remaining.push(point.remaining);
    this.recorded.push(point.recordedUnits);
    this.returned.push(point.returnedUnits ?? 0);
    OUTCOME_ORDER.forEach((outcome, i) => this.rates[i]?.push(point.rates[outcome]));
    this.backlog.push(point.pending);
    this.lagSeconds.push(point.lagMs === null ? 0 : point.lagMs / 1000);
    if (this.t.length > MAX_POINTS) {
      for (const series of [
        this.t,
        this.remaining,
        this.recorded,
        this.returned,
        this.backlog,
        this.lagSeconds,
        ...this.rates,
      ])
        series.shift();
    }
  }

  private redraw(): void {
    for (const { plot, data, element } of this.plots) {
      plot.setData(data());
      element.dataset.points = String(this.t.length); // how much history is drawn (the tests read it)
    }
  }

  private resize(): void {
    for (const { plot, element } of this.plots) {
      const width = Math.max(200, element.clientWidth);
      if (width !== plot.width) plot.setSize({ width, height: HEIGHT });
    }
  }
}
