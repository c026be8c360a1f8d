/** Number and time formats of the dashboard: readable at a glance, exact where it matters. */

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

/** 12,345 (exact: the test reads these back). */
export const count = (n: number): string => integer.format(n);

export const rate = (perSecond: number): string => `${decimal.format(perSecond)}/s`;

export const percent = (ratio: number | null): string =>
  ratio === null ? '–' : `${decimal.format(ratio * 100)} %`;

export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  return h < 48 ? `${h} h ${m % 60} min` : `${Math.floor(h / 24)} d ${h % 24} h`;
}

export function lag(ms: number | null): string {
  if (ms === null) return 'none';
  return ms < 1000 ? `${integer.format(ms)} ms` : duration(ms);
}

/** "ends in 6 d 23 h", "starts in 4 min", "ended 3 min ago". */
export function saleWindow(startsAt: string, endsAt: string, now = Date.now()): string {
  const start = Date.parse(startsAt);
  const end = Date.parse(endsAt);
  if (now < start) return `starts in ${duration(start - now)}`;
  if (now < end) return `ends in ${duration(end - now)}`;
  return `ended ${duration(now - end)} ago`;
}

export const clock = (t: number | string): string =>
  new Date(t).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' });
