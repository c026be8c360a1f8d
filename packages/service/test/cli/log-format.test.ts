import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { logDestination, logFormat } from '../../src/cli/log-format.js';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'lockstock-log-format-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What a logger writing through logDestination(fd of a file) printed for one info line. */
function logToFile(env: NodeJS.ProcessEnv): string {
  const file = join(dir, `log-${Math.random().toString(36).slice(2)}`);
  const fd = openSync(file, 'w');
  try {
    pino({ level: 'info' }, logDestination(fd, env)).info({ saleId: '7' }, 'sale created');
  } finally {
    closeSync(fd);
  }
  return readFileSync(file, 'utf8');
}

describe('the log format', () => {
  it('is pretty on a terminal and JSON when piped, unless LOG_FORMAT says', () => {
    expect(logFormat({}, true)).toBe('pretty');
    expect(logFormat({}, false)).toBe('json');
    expect(logFormat({ LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(logFormat({ LOG_FORMAT: 'pretty' }, false)).toBe('pretty');
    expect(logFormat({ LOG_FORMAT: ' Pretty ' }, false)).toBe('pretty');
    expect(logFormat({ LOG_FORMAT: '' }, true)).toBe('pretty');
    expect(() => logFormat({ LOG_FORMAT: 'yaml' }, true)).toThrow(
      'LOG_FORMAT must be json or pretty, not "yaml"',
    );
  });

  it('writes JSON lines to a file, and readable lines with LOG_FORMAT=pretty', () => {
    const json = logToFile({});
    expect(JSON.parse(json)).toMatchObject({ level: 30, msg: 'sale created', saleId: '7' });
    const pretty = logToFile({ LOG_FORMAT: 'pretty' });
    // "[12:34:56.789] INFO: sale created" and the fields below, no colours (a file is no terminal).
    expect(pretty).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: sale created\n\s+saleId: "7"\n$/);
    expect(pretty).not.toContain('\x1b[');
  });

  it('is decided on the descriptor: pretty with colours on a pseudo-terminal, JSON through a pipe', async () => {
    const module = fileURLToPath(new URL('../../dist/cli/log-format.js', import.meta.url));
    const program = `import pino from 'pino'; import { logDestination } from ${JSON.stringify(module)}; pino(logDestination(1)).info('hello');`;
    const args = ['--input-type=module', '-e', program];
    const env = { ...process.env, LOG_FORMAT: undefined };
    const run = async (command: string, argv: string[]) => {
      const child = spawn(command, argv, { env, stdio: ['ignore', 'pipe', 'inherit'] });
      const chunks: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
      await once(child, 'close');
      return Buffer.concat(chunks).toString('utf8');
    };
    const piped = await run(process.execPath, args);
    expect(JSON.parse(piped)).toMatchObject({ level: 30, msg: 'hello' });
    // util-linux `script` gives the program a pseudo-terminal as stdout.
    const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
    const onTerminal = await run('script', [
      '-qefc',
      [process.execPath, ...args].map(quote).join(' '),
      '/dev/null',
    ]);
    expect(onTerminal).toContain('\x1b['); // coloured
    expect(onTerminal.replace(/\x1b\[[0-9;]*m/g, '')).toMatch(/\] INFO: hello/); // eslint-disable-line no-control-regex
    expect(onTerminal).not.toContain('"level"');
  });

  it('serve --help and worker --help name LOG_LEVEL and LOG_FORMAT', async () => {
    for (const command of ['serve', 'worker']) {
      const { code, stdout } = await runCli([command, '--help']);
      expect(code, command).toBe(0);
      expect(stdout, command).toMatch(
        /LOG_LEVEL=<level> +fatal, error, warn, info \(default\), debug, trace or silent/,
      );
      expect(stdout, command).toMatch(
        /LOG_FORMAT=json\|pretty +default: pretty on a terminal, JSON lines when the output is piped/,
      );
    }
  });
});
