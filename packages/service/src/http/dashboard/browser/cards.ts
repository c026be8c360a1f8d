import type { DashboardPoint, DashboardSnapshot, LiveSale } from '../schemas.js';
import { MAX_POINTS, SaleCharts } from './charts.js';
import * as format from './format.js';
import { OUTCOME_ORDER, OUTCOMES } from './outcomes.js';

const STATUS_LABELS: Record<LiveSale['status'], string> = {
  scheduled: 'scheduled',
  active: 'on sale',
  sold_out: 'sold out',
  ended: 'ended',
};

const RAFFLE_PHASES = { entries: 'entries open', drawing: 'drawing', drawn: 'drawn' } as const;

/** A raffle sale's line: its phase, entries, winners, paid, and the waitlist once drawn. */
function raffleLine(raffle: NonNullable<LiveSale['raffle']>): string {
  const counts = [`${raffle.entries} entries`];
  if (raffle.phase === 'drawn') {
    counts.push(`${raffle.winners} winners`, `${raffle.paid} paid`, `${raffle.waitlist} waitlist`);
  }
  return `raffle, ${RAFFLE_PHASES[raffle.phase]}: ${counts.join(' · ')}`;
}

/** A sale's waiting room: who waits, who was admitted, at what pace. */
function roomLine(room: NonNullable<LiveSale['room']>): string {
  const pow = room.powBits > 0 ? ` · proof of work ${room.powBits} bits` : '';
  return `waiting room: ${room.waiting} waiting · ${room.admitted} admitted · ${room.ratePerSec}/s${pow}`;
}

/** One sale's numbers, filled from each snapshot (its charts are built once it is in the page). */
class SaleCard {
  readonly element: HTMLElement;
  private readonly fields = new Map<string, HTMLElement>();

  constructor(template: HTMLTemplateElement, sale: LiveSale) {
    this.element = (template.content.firstElementChild as HTMLElement).cloneNode(true) as HTMLElement;
    this.element.dataset.sale = sale.id;
    for (const field of this.element.querySelectorAll<HTMLElement>('[data-field]')) {
      this.fields.set(field.dataset.field as string, field);
    }
    const list = this.field('outcomes');
    for (const outcome of OUTCOME_ORDER) {
      const item = document.createElement('li');
      item.dataset.outcome = outcome;
      item.title = OUTCOMES[outcome].title ?? `Purchase attempts answered '${OUTCOMES[outcome].label}'`;
      const swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = OUTCOMES[outcome].color;
      const label = document.createElement('span');
      label.className = 'label';
      label.textContent = OUTCOMES[outcome].label;
      const total = document.createElement('span');
      total.className = 'count';
      const rate = document.createElement('span');
      rate.className = 'rate';
      item.append(swatch, label, total, rate);
      list.append(item);
    }
  }

  private field(name: string): HTMLElement {
    const element = this.fields.get(name);
    if (!element) throw new Error(`the sale card template has no [data-field="${name}"]`);
    return element;
  }

  private set(name: string, text: string): void {
    const element = this.field(name);
    if (element.textContent !== text) element.textContent = text;
  }

  update(sale: LiveSale): void {
    this.set('name', sale.name);
    this.set('id', sale.id);
    this.set(
      'window',
      `${format.saleWindow(sale.startsAt, sale.endsAt)} · ${sale.raffle ? raffleLine(sale.raffle) : `limit ${sale.perUserLimit} per buyer`}${sale.room ? ` · ${roomLine(sale.room)}` : ''}`,
    );
    const status = this.field('status');
    status.dataset.status = sale.status;
    this.set('status', STATUS_LABELS[sale.status]);
    this.set('remaining', sale.remaining === null ? 'not in Redis' : format.count(sale.remaining));
    this.set('stock', format.count(sale.stock));
    const left = sale.stock > 0 && sale.remaining !== null ? sale.remaining / sale.stock : 0;
    this.field('bar').style.width = `${(left * 100).toFixed(1)}%`;
    const parts = this.field('parts');
    parts.hidden = sale.parts.length === 0;
    this.set(
      'parts',
      sale.parts.length === 0
        ? ''
        : `${sale.parts.length} parts: ${sale.parts
            .map((p) => (p.remaining === null ? '–' : format.count(p.remaining)))
            .join(' · ')} left`,
    );
    // Reserved counts orders (the outcome 'reserved', as under the charts); held and returned count units.
    const reserved = sale.attempts.reserved;
    this.set('reserved', format.count(reserved));
    this.set('reserved-unit', reserved === 1 ? 'order' : 'orders');
    this.set('held', format.count(sale.sold));
    this.set('held-unit', sale.sold === 1 ? 'unit' : 'units');
    const { cancelledUnits, expiredUnits } = sale.recorded;
    this.set('returned', format.count(cancelledUnits + expiredUnits));
    this.set(
      'returned-detail',
      cancelledUnits > 0 && expiredUnits > 0
        ? `${format.count(cancelledUnits)} cancelled, ${format.count(expiredUnits)} expired`
        : cancelledUnits > 0
          ? 'cancelled'
          : expiredUnits > 0
            ? 'expired'
            : 'units',
    );
    this.set('recorded', format.count(sale.recorded.confirmedOrders));
    const units = sale.recorded.confirmedUnits;
    this.set('recorded-units', `${format.count(units)} ${units === 1 ? 'unit' : 'units'}`);
    this.set('rejected', format.count(sale.recorded.rejectedOrders));
    this.set('dead', format.count(sale.pipeline.deadLetters));
    this.set('pending', format.count(sale.pipeline.pending + sale.pipeline.undelivered));
    this.set('lag', format.lag(sale.pipeline.lagMs));
    this.set('visitors', format.count(sale.visitors));
    this.set('buyers', format.count(sale.buyers));
    this.set('conversion', format.percent(sale.conversion));
    this.field('rejected').classList.toggle('alert', sale.recorded.rejectedOrders > 0);
    this.field('dead').classList.toggle('alert', sale.pipeline.deadLetters > 0);
    for (const item of this.field('outcomes').children) {
      const outcome = (item as HTMLElement).dataset.outcome as keyof typeof OUTCOMES;
      (item.querySelector('.count') as HTMLElement).textContent = format.count(sale.attempts[outcome]);
      (item.querySelector('.rate') as HTMLElement).textContent = format.rate(sale.rates[outcome]);
    }
  }
}

/** The sales column: a card per sale of the latest snapshot, newest first. */
export class SaleBoard {
  private readonly cards = new Map<string, { card: SaleCard; charts: SaleCharts }>();
  private points: DashboardPoint[] = [];

  constructor(
    private readonly root: HTMLElement,
    private readonly template: HTMLTemplateElement,
    private readonly empty: HTMLElement,
  ) {}

  /** The server's history (sent on every (re)connect): charts restart from it. */
  history(points: DashboardPoint[]): void {
    this.points = points;
    for (const [id, { charts }] of this.cards) charts.load(id, points);
  }

  snapshot(snapshot: DashboardSnapshot, point?: DashboardPoint): void {
    if (point) {
      this.points.push(point);
      if (this.points.length > MAX_POINTS) this.points.shift();
    }
    const seen = new Set<string>();
    snapshot.sales.forEach((sale, index) => {
      seen.add(sale.id);
      let entry = this.cards.get(sale.id);
      if (!entry) {
        const card = new SaleCard(this.template, sale);
        // In the page first: charts measure their width.
        this.root.insertBefore(card.element, this.root.children[index] ?? null);
        const charts = new SaleCharts(card.element, sale.stock);
        charts.load(sale.id, this.points);
        this.cards.set(sale.id, (entry = { card, charts }));
      } else {
        if (this.root.children[index] !== entry.card.element) {
          this.root.insertBefore(entry.card.element, this.root.children[index] ?? null);
        }
        const salePoint = point?.sales[sale.id];
        if (point && salePoint) entry.charts.append(point.t, salePoint);
      }
      entry.card.update(sale);
    });
    for (const [id, { card, charts }] of this.cards) {
      if (seen.has(id)) continue;
      charts.destroy();
      card.element.remove();
      this.cards.delete(id);
    }
    this.empty.hidden = snapshot.sales.length > 0;
  }
}
