import { describe, expect, it } from 'vitest';
import { LiveHolds } from '../../src/locks/core/context.js';

// Which owners hold which lock in this client (a reentrant owner must try at once, never queue behind
// waiters for its own release). One owner is the common case and is kept without a Map of its own.
describe('LiveHolds', () => {
  it("counts one owner's holds and forgets the lock when the last is released", () => {
    const holds = new LiveHolds();
    holds.add('lock', 'a');
    holds.add('lock', 'a');
    holds.remove('lock', 'a');
    expect(holds.has('lock', 'a')).toBe(true);
    holds.remove('lock', 'a');
    expect(holds.has('lock', 'a')).toBe(false);
    holds.remove('lock', 'a'); // one release too many changes nothing
    holds.add('lock', 'a');
    expect(holds.has('lock', 'a')).toBe(true);
  });

  it('keeps owners of the same lock apart (shared locks: readers, semaphore permits)', () => {
    const holds = new LiveHolds();
    holds.add('lock', 'a');
    holds.add('lock', 'a');
    holds.add('lock', 'b');
    expect(holds.has('lock', 'c')).toBe(false);
    holds.remove('lock', 'c');
    holds.remove('lock', 'a');
    expect([holds.has('lock', 'a'), holds.has('lock', 'b')]).toEqual([true, true]);
    holds.remove('lock', 'b');
    expect([holds.has('lock', 'a'), holds.has('lock', 'b')]).toEqual([true, false]);
    holds.remove('lock', 'a');
    expect(holds.has('lock', 'a')).toBe(false);
    expect(holds.has('other', 'a')).toBe(false);
  });

  it("an owner that is not the lock's only holder does not release the holder's holds", () => {
    const holds = new LiveHolds();
    holds.add('lock', 'a');
    holds.remove('lock', 'b');
    expect(holds.has('lock', 'a')).toBe(true);
    expect(holds.has('lock', 'b')).toBe(false);
  });
});
