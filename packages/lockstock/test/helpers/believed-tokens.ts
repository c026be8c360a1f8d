import type { HistoryEvent } from '../../src/checker/index.js';

/**
 * A history as the checker sees a resource with its fence switched off: each accepted write to `res`
 * (a resource that checks no token, recorded without one) gets the token its writer believed it had
 * (`tokens`, by owner), so the checker's fence check judges it — a stale write the resource took is
 * then reported, not skipped.
 */
export function withBelievedTokens(
  events: readonly HistoryEvent[],
  res: string,
  tokens: Readonly<Record<string, number>>,
): HistoryEvent[] {
  return events.map((event) => {
    const owner = String(event.owner);
    if (event.src !== 'resource' || event.f !== 'write' || event.res !== res || event.token !== undefined)
      return event;
    return owner in tokens ? { ...event, token: tokens[owner] } : event;
  });
}
