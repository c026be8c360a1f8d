import type { AttemptOutcome } from '../../../sale/outcomes.js';

/** How each purchase outcome is shown; a Record, so a new outcome cannot be forgotten here. */
export const OUTCOMES: Record<AttemptOutcome, { label: string; color: string; title?: string }> = {
  reserved: {
    label: 'reserved',
    color: '#34d399',
    title:
      "Purchases answered 'reserved' (202): orders, including those later cancelled or expired (the Reserved tile)",
  },
  sold_out: { label: 'sold out', color: '#fbbf24' },
  limit_reached: { label: 'limit reached', color: '#c084fc' },
  not_started: { label: 'not started', color: '#38bdf8' },
  ended: { label: 'ended', color: '#94a3b8' },
  duplicate: { label: 'repeat (same key)', color: '#f472b6' },
  idempotency_key_reused: { label: 'key reused', color: '#f87171' },
};

/** Display order: the object's order. */
export const OUTCOME_ORDER = Object.keys(OUTCOMES) as AttemptOutcome[];
