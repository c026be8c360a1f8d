import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  checkLinearizable,
  formatHistory,
  keyValueModel,
  mutexModel,
  operationsOf,
  parseHistory,
  registerModel,
  semaphoreModel,
  type HistoryEvent,
} from '../../src/checker/index.js';

/** Porcupine's EDN lines (`{:process 3, :type :ok, :f :get, :key "7", :value "x 3 12 y"}`) as events. */
function porcupineKv(file: string): HistoryEvent[] {
  const text = gunzipSync(
    readFileSync(new URL(`../fixtures/porcupine/kv/${file}.gz`, import.meta.url)),
  ).toString();
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const field = (name: string) => new RegExp(`:${name} (nil|"[^"]*"|:?[\\w-]+)`).exec(line)?.[1];
      const unquote = (v: string | undefined) =>
        v === undefined || v === 'nil' ? undefined : v.replace(/^"|"$/g, '');
      return {
        proc: String(field('process')),
        type: String(field('type')).slice(1) as HistoryEvent['type'],
        f: String(field('f')).slice(1),
        key: unquote(field('key')),
        value: unquote(field('value')),
      };
    });
}

describe('linearizability against outside verdicts (Porcupine key-value histories)', () => {
  for (const [file, expected] of [
    ['c01-ok.txt', true],
    ['c01-bad.txt', false],
    ['c10-ok.txt', true],
    ['c10-bad.txt', false],
    ['c50-ok.txt', true],
    ['c50-bad.txt', false],
  ] as const) {
    it(`${file}: ${expected ? 'linearizable' : 'not linearizable'}`, () => {
      const ops = operationsOf(porcupineKv(file));
      const result = checkLinearizable(ops, keyValueModel(), { timeoutMs: 30_000 });
      expect(result.valid).toBe(expected);
      if (!expected) expect(result.counterexample?.stuckAt.f).toMatch(/get|put|append/);
    });
  }
});

/**
 * Jepsen's etcd register histories as Porcupine keeps them: lines `INFO  jepsen.util - <process>\t:<type>
 * \t:<f>\t<value>`, everything else skipped. A `:fail :read` timed out: its outcome is unknown.
 */
function jepsenEtcd(file: string): HistoryEvent[] {
  const text = gunzipSync(
    readFileSync(new URL(`../fixtures/porcupine/jepsen/${file}.gz`, import.meta.url)),
  ).toString();
  const events: HistoryEvent[] = [];
  for (const line of text.split('\n')) {
    const match = /jepsen\.util - (\d+)\t:(\w+)\t:(\w+)\t(.*)$/.exec(line);
    if (!match) continue;
    const [, proc, type, f, raw] = match as unknown as [string, string, string, string, string];
    const value: unknown =
      raw === 'nil'
        ? null
        : raw.startsWith('[')
          ? raw.slice(1, -1).trim().split(/\s+/).map(Number)
          : /^-?\d+$/.test(raw)
            ? Number(raw)
            : raw;
    const unknownRead = f === 'read' && type === 'fail';
    events.push({ proc, type: (unknownRead ? 'info' : type) as HistoryEvent['type'], f, value });
  }
  return events;
}

const expected = JSON.parse(
  readFileSync(new URL('../fixtures/porcupine/expected.json', import.meta.url), 'utf8'),
) as Record<string, boolean>;

describe("linearizability against outside verdicts (Jepsen's etcd register histories)", () => {
  const files = Object.keys(expected).filter((f) => f.startsWith('jepsen/'));
  it(`agrees with all ${files.length} verdicts, each within seconds`, () => {
    const disagreements: string[] = [];
    let slowest = 0;
    for (const file of files) {
      const startedAt = performance.now();
      const ops = operationsOf(jepsenEtcd(file.slice('jepsen/'.length)));
      const result = checkLinearizable(ops, registerModel(), { timeoutMs: 10_000 });
      slowest = Math.max(slowest, performance.now() - startedAt);
      if (result.valid !== expected[file])
        disagreements.push(`${file}: ${String(result.valid)}, expected ${String(expected[file])}`);
    }
    expect(disagreements).toEqual([]);
    expect(files.length).toBe(102); // etcd_095 is not in Porcupine's verdicts
    console.log(`etcd histories: slowest ${Math.round(slowest)} ms`);
  });
});

/** A history from compact steps: [proc, type, f, value?, extra?] in time order. */
function history(steps: Array<[string, HistoryEvent['type'], string, unknown?, Record<string, unknown>?]>) {
  return steps.map(([proc, type, f, value, extra]) => ({ proc, type, f, value, ...extra }) as HistoryEvent);
}

describe('models', () => {
  it('register: a stale read after a completed write is caught; overlapping ones may go either way', () => {
    const stale = history([
      ['a', 'invoke', 'write', 1],
      ['a', 'ok', 'write', 1],
      ['b', 'invoke', 'read'],
      ['b', 'ok', 'read', null],
    ]);
    expect(checkLinearizable(operationsOf(stale), registerModel()).valid).toBe(false);
    const overlapping = history([
      ['a', 'invoke', 'write', 1],
      ['b', 'invoke', 'read'],
      ['b', 'ok', 'read', null],
      ['a', 'ok', 'write', 1],
    ]);
    expect(checkLinearizable(operationsOf(overlapping), registerModel()).valid).toBe(true);
    // A cas whose outcome is unknown may have swapped — or not.
    const unknownCas = history([
      ['a', 'invoke', 'write', 1],
      ['a', 'ok', 'write', 1],
      ['b', 'invoke', 'cas', [1, 2]],
      ['b', 'info', 'cas', [1, 2]],
      ['c', 'invoke', 'read'],
      ['c', 'ok', 'read', 2],
      ['d', 'invoke', 'read'],
      ['d', 'ok', 'read', 2],
    ]);
    expect(checkLinearizable(operationsOf(unknownCas), registerModel()).valid).toBe(true);
    const cas = history([
      ['a', 'invoke', 'cas', [null, 5]],
      ['a', 'fail', 'cas', [null, 5]],
    ]);
    expect(checkLinearizable(operationsOf(cas), registerModel()).valid).toBe(false); // it was null
  });

  it('mutex: two holders at once are not linearizable; a timed-out acquire may or may not have won', () => {
    const twice = history([
      ['a', 'invoke', 'acquire'],
      ['a', 'ok', 'acquire'],
      ['b', 'invoke', 'acquire'],
      ['b', 'ok', 'acquire'],
      ['a', 'invoke', 'release'],
      ['a', 'ok', 'release'],
    ]);
    const verdict = checkLinearizable(operationsOf(twice), mutexModel());
    expect(verdict.valid).toBe(false);
    // The longest explainable prefix is a's acquire, and b's acquire cannot follow it.
    expect(verdict.counterexample?.linearized.map((op) => `${op.proc} ${op.f}`)).toEqual(['a acquire']);
    expect(verdict.counterexample?.stuckAt).toMatchObject({ proc: 'b', f: 'acquire' });
    const handedOver = history([
      ['a', 'invoke', 'acquire'],
      ['a', 'ok', 'acquire'],
      ['b', 'invoke', 'acquire'],
      ['a', 'invoke', 'release'],
      ['a', 'ok', 'release'],
      ['b', 'ok', 'acquire'],
    ]);
    expect(checkLinearizable(operationsOf(handedOver), mutexModel()).valid).toBe(true);
    const unknown = history([
      ['a', 'invoke', 'acquire'], // never completes: it may hold the lock from here on
      ['b', 'invoke', 'acquire'],
      ['b', 'ok', 'acquire'],
    ]);
    expect(checkLinearizable(operationsOf(unknown), mutexModel()).valid).toBe(true);
    const releaseByOther = history([
      ['a', 'invoke', 'acquire'],
      ['a', 'ok', 'acquire'],
      ['b', 'invoke', 'release'],
      ['b', 'ok', 'release'],
    ]);
    expect(checkLinearizable(operationsOf(releaseByOther), mutexModel()).valid).toBe(false);
  });

  it('fenced mutex: tokens must grow in the linearization', () => {
    const grows = (second: number) =>
      history([
        ['a', 'invoke', 'acquire'],
        ['a', 'ok', 'acquire', undefined, { token: 7 }],
        ['a', 'invoke', 'release'],
        ['a', 'ok', 'release'],
        ['b', 'invoke', 'acquire'],
        ['b', 'ok', 'acquire', undefined, { token: second }],
      ]);
    expect(checkLinearizable(operationsOf(grows(8)), mutexModel({ fenced: true })).valid).toBe(true);
    expect(checkLinearizable(operationsOf(grows(7)), mutexModel({ fenced: true })).valid).toBe(false);
    expect(checkLinearizable(operationsOf(grows(7)), mutexModel()).valid).toBe(true); // unfenced: fine
  });

  it('semaphore: a third holder of two permits is caught', () => {
    const three = history([
      ['a', 'invoke', 'acquire'],
      ['a', 'ok', 'acquire'],
      ['b', 'invoke', 'acquire'],
      ['b', 'ok', 'acquire'],
      ['c', 'invoke', 'acquire'],
      ['c', 'ok', 'acquire'],
    ]);
    expect(checkLinearizable(operationsOf(three), semaphoreModel(2)).valid).toBe(false);
    expect(checkLinearizable(operationsOf(three), semaphoreModel(3)).valid).toBe(true);
  });

  it('reads and writes JSON Lines, times as decimal strings', () => {
    const events = history([
      ['a', 'invoke', 'write', 1, { t: '1000000000000000001' }],
      ['a', 'ok', 'write', 1, { t: '1000000000000000002' }],
    ]);
    const parsed = parseHistory(formatHistory(events));
    expect(parsed).toEqual(events);
    expect(operationsOf(parsed)[0]).toMatchObject({
      call: 1000000000000000001n,
      return: 1000000000000000002n,
    });
    expect(() => parseHistory('{"type":"ok"}')).toThrow(/needs a type/);
    expect(() => operationsOf(history([['a', 'ok', 'read']]))).toThrow(/without invoking/);
  });
});
