import { describe, expect, it } from 'vitest';
import { Resources } from '../../src/cli/lifecycle.js';

describe('Resources.closeAll', () => {
  it('closes newest first, each once, and goes on past a close that never ends (reported, not clean)', async () => {
    const closed: string[] = [];
    const reported: Array<[string, string]> = [];
    const resources = new Resources((what, error) => reported.push([what, (error as Error).message]), 50);
    resources.add('the connection', () => void closed.push('the connection'));
    resources.add('a rebuild stuck on a lost master', () => new Promise(() => undefined));
    resources.add('a throwing listener', () => {
      throw new Error('boom');
    });
    resources.add('the app', () => void closed.push('the app'));

    const [first, second] = [resources.closeAll(), resources.closeAll()];
    expect(await first).toBe(false);
    expect(await second).toBe(false);
    expect(closed).toEqual(['the app', 'the connection']);
    expect(reported).toEqual([
      ['a throwing listener', 'boom'],
      ['a rebuild stuck on a lost master', 'still closing after 50 ms; going on without it'],
    ]);
  });

  it('is clean when everything closes, and closes at once what is added while closing', async () => {
    const resources = new Resources(() => expect.unreachable(), 50);
    let late = false;
    resources.add('slow', () => new Promise<void>((resolve) => setImmediate(resolve)));
    const closing = resources.closeAll();
    resources.add('late', () => void (late = true));
    expect(await closing).toBe(true);
    expect(late).toBe(true);
  });
});
