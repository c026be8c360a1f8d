import type { DashboardSnapshot, LiveEvents } from '../schemas.js';
import { setUpAdmin } from './admin.js';
import { byId, isError, request } from './api.js';
import { SaleBoard } from './cards.js';
import { setUpDemo } from './demo.js';
import * as format from './format.js';

/**
 * The dashboard page: one snapshot on load, then the live stream (GET /api/live, Server-Sent Events):
 * `history` on every (re)connect, a `tick` every second. EventSource reconnects by itself.
 */
const board = new SaleBoard(byId('sales'), byId<HTMLTemplateElement>('sale-card'), byId('no-sales'));
const demo = setUpDemo();
setUpAdmin();
const connection = byId('connection');
const banner = byId('banner');

function state(kind: 'connecting' | 'live' | 'reconnecting' | 'degraded', text: string): void {
  connection.dataset.state = kind;
  (connection.querySelector('.label') as HTMLElement).textContent = text;
}

function render(snapshot: DashboardSnapshot, point?: LiveEvents['tick']['point']): void {
  board.snapshot(snapshot, point);
  demo.sales(snapshot.sales);
  const sum = (f: (s: DashboardSnapshot['sales'][number]) => number) =>
    snapshot.sales.reduce((total, sale) => total + f(sale), 0);
  const totals: Record<string, string> = {
    sales: format.count(snapshot.sales.length),
    attempts: format.rate(sum((s) => Object.values(s.rates).reduce((a, b) => a + b, 0))),
    held: format.count(sum((s) => s.sold)),
    recorded: format.count(sum((s) => s.recorded.confirmedUnits)),
    backlog: format.count(sum((s) => s.pipeline.pending + s.pipeline.undelivered)),
  };
  for (const [name, text] of Object.entries(totals)) {
    const element = document.querySelector<HTMLElement>(`#totals [data-total="${name}"]`);
    if (element) element.textContent = text;
  }
  byId('updated').textContent = `updated ${format.clock(snapshot.at)}`;
}

void request<DashboardSnapshot>('GET', '/api/dashboard').then((answer) => {
  if (!isError(answer.body)) render(answer.body);
});

const source = new EventSource('/api/live');
source.addEventListener('open', () => state('live', 'live'));
source.addEventListener('error', () => state('reconnecting', 'reconnecting…'));
source.addEventListener('history', (event) => {
  board.history((JSON.parse((event as MessageEvent<string>).data) as LiveEvents['history']).points);
});
source.addEventListener('tick', (event) => {
  const { snapshot, point } = JSON.parse((event as MessageEvent<string>).data) as LiveEvents['tick'];
  banner.hidden = true;
  state('live', 'live');
  render(snapshot, point);
});
source.addEventListener('unavailable', (event) => {
  const { message } = JSON.parse((event as MessageEvent<string>).data) as LiveEvents['unavailable'];
  banner.textContent = message;
  banner.hidden = false;
  state('degraded', 'degraded');
});
