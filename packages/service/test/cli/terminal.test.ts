import { describe, expect, it } from 'vitest';
import { whichExecutable } from '@lockstock/servers';
import { createProgress, formatDuration, PlanTracker } from '../../src/cli/progress.js';
import { STRATEGIES } from '../../src/lab/strategies/index.js';
import { renderTable, tableStyleFor, type TableData } from '../../src/support/table.js';
import { runCli, runInTerminal } from '../helpers/cli.js';

const sample: TableData = {
  columns: [{ header: 'name' }, { header: 'ops/s', align: 'right' }, { header: 'verdict', wrap: true }],
  rows: [
    ['naive', '12', 'oversold 60 units in 2/2 runs'],
    ['atomic', '51990', 'correct: no oversell, nothing left unsold'],
  ],
};

const boxLines = (lines: string[]) => lines.filter((line) => /^[┌│├└]/.test(line));

describe('report tables', () => {
  it('renders Markdown exactly as the README quotes it', () => {
    expect(renderTable(sample, 'markdown')).toEqual([
      '| name | ops/s | verdict |',
      '|---|---:|---|',
      '| naive | 12 | oversold 60 units in 2/2 runs |',
      '| atomic | 51990 | correct: no oversell, nothing left unsold |',
    ]);
  });

  it('renders an aligned box table for a terminal, numbers to the right', () => {
    const lines = renderTable(sample, 'terminal');
    expect(new Set(lines.map((line) => line.length)).size).toBe(1); // every line equally wide
    expect(lines).toContain('│ naive  │    12 │ oversold 60 units in 2/2 runs             │');
    expect(lines).toContain('│ atomic │ 51990 │ correct: no oversell, nothing left unsold │');
  });

  it('wraps the prose columns to fit the terminal, never the figures', () => {
    const lines = renderTable(sample, 'terminal', 40);
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(40);
    expect(lines.some((line) => line.includes('51990'))).toBe(true);
    expect(lines.join('\n')).toMatch(/correct: no\s+│\n.*oversell,/);
  });

  it('is Markdown when asked or when the output is not a terminal', () => {
    expect(tableStyleFor({ isTTY: true })).toBe('terminal');
    expect(tableStyleFor({ isTTY: true }, true)).toBe('markdown');
    expect(tableStyleFor({ isTTY: false })).toBe('markdown');
    expect(tableStyleFor({})).toBe('markdown');
  });
});

describe('progress', () => {
  it('estimates what is left from the pace so far, over the weight of the plan', () => {
    let now = 0;
    const plan = new PlanTracker(() => now);
    plan.begin([
      { label: 'a', weight: 1 },
      { label: 'b', weight: 1 },
      { label: 'c', weight: 2 },
    ]);
    expect(plan.remainingMs).toBeUndefined();
    plan.start();
    now = 1_000;
    plan.advance(0.5); // half of a quarter of the plan in 1 s: 7 s to go
    expect(plan.remainingMs).toBe(7_000);
    now = 2_000;
    plan.finish();
    plan.start();
    expect(plan.position).toEqual({ step: 2, steps: 3 });
    expect(plan.remainingMs).toBe(6_000);
    expect([formatDuration(7_000), formatDuration(754_000), formatDuration(4_020_000)]).toEqual([
      '0:07',
      '12:34',
      '1h07m',
    ]);
  });

  it('writes a line per finished step, with its result and the ETA, when stderr is not a terminal', () => {
    const written: string[] = [];
    const stream = { isTTY: false, write: (text: string) => written.push(text) };
    const progress = createProgress({ unit: 'runs', stream: stream as unknown as NodeJS.WriteStream });
    progress.begin([
      { label: 'x run 1/2', weight: 1 },
      { label: 'x run 2/2', weight: 1 },
    ]);
    progress.start();
    progress.finish();
    progress.start();
    progress.finish('x: correct');
    progress.end();
    expect(written).toEqual([
      expect.stringMatching(/^\[1\/2\] x run 1\/2 \(ETA \d+:\d\d\)\n$/),
      '[2/2] x: correct\n',
    ]);
  });
});

describe('lockstock lab and bench in a terminal and in a pipe', () => {
  const script = whichExecutable('script');

  it('lab --list names every strategy with its one-line description', async () => {
    const { code, stdout } = await runCli(['lab', '--list']);
    expect(code).toBe(0);
    for (const strategy of STRATEGIES) {
      expect(stdout).toContain(`| ${strategy.name} | ${strategy.expectation.replaceAll('_', ' ')} |`);
      expect(stdout).toContain(`| ${strategy.title} |`);
    }
  });

  it.runIf(script)('lab --list in a terminal is a box table within the width', async () => {
    const { code, output } = await runInTerminal(['lab', '--list'], 100);
    expect(code).toBe(0);
    const lines = boxLines(output.split('\n'));
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(100);
    for (const strategy of STRATEGIES) expect(output).toMatch(new RegExp(`│ ${strategy.name} +│`));
  });

  it.runIf(script)(
    'lab in a terminal: a progress bar with ETA, then a box table; --markdown prints Markdown',
    async () => {
      const args = ['lab', '--strategies', 'naive-redis,redis-lua', '--stock', '5', '--buyers', '20'];
      const small = [...args, '--processes', '1', '--runs', '2'];
      const [terminal, markdown] = [
        await runInTerminal(small, 200),
        await runInTerminal([...small, '--markdown'], 200),
      ];
      expect(terminal.code, terminal.output).toBe(0);
      expect(terminal.output).toMatch(/\d+% \| \d\/4 runs \| \d+:\d\d elapsed, ETA (\d+:\d\d|\?) \|/);
      expect(terminal.output).toMatch(/^naive-redis: oversold \d+ units in \d\/2 runs$/m);
      expect(terminal.output).toMatch(/│ redis-lua +│ correct +│ yes +│ +0 \(0\/2\) │/);
      expect(terminal.output).not.toContain('|---|');

      expect(markdown.code, markdown.output).toBe(0);
      expect(markdown.output).toMatch(/^\| redis-lua \| correct \| yes \| 0 \(0\/2\) \|/m);
      expect(markdown.output).not.toContain('│ redis-lua');
    },
  );

  it('bench locks: steps and ETA on stderr, the machine and a Markdown table on stdout when piped', async () => {
    const { code, stdout, stderr } = await runCli([
      'bench',
      'locks',
      '--runs',
      '1',
      '--uncontended-ms',
      '200',
      '--contended-ms',
      '200',
      '--libraries',
      'lockstock',
      '--scenarios',
      'uncontended,contended',
      '--kinds',
      'fair',
    ]);
    expect(code, stderr).toBe(0);
    // A warm-up round of each row first (not counted), then the measured run.
    expect(stderr).toMatch(/^\[1\/4\] warm-up \[default\] uncontended lockstock fair\/single: \d+ pairs\/s/m);
    expect(stderr).toMatch(/^\[2\/4\] warm-up \[default\] contended lockstock fair\/single: \d+ CS\/s/m);
    expect(stderr).toMatch(
      /^\[3\/4\] run 1\/1 \[default\] uncontended lockstock fair\/single: \d+ pairs\/s \(ETA/m,
    );
    expect(stderr).toMatch(/^\[4\/4\] run 1\/1 \[default\] contended lockstock fair\/single: \d+ CS\/s/m);
    expect(stdout).toMatch(/^machine: .+ cores, .+ node v\d+/);
    expect(stdout).toContain('| scenario | kind | topology | client | library | ops/s | × best peer |');
    expect(stdout).toMatch(/^\| contended \| fair \| single \| default \| lockstock \| \d+ \|/m);
    expect(stdout).not.toContain('[1/4]'); // progress stays on stderr
  });
});
