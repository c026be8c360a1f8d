/**
 * How the service's logs look: one line per event, readable by a person at a terminal (pino-pretty:
 * time, level, message, then the fields) and JSON lines for machines when the output is piped or
 * redirected (a log collector, `| jq`, a file) — or as LOG_FORMAT says.
 */
import { isatty } from 'node:tty';
import pino, { type DestinationStream } from 'pino';
import pinoPretty from 'pino-pretty';

export type LogFormat = 'json' | 'pretty';

/** The environment variables the logs read, as `--help` shows them. */
export const LOG_ENV_HELP = `
Logs:
  LOG_LEVEL=<level>       fatal, error, warn, info (default), debug, trace or silent
  LOG_FORMAT=json|pretty  default: pretty on a terminal, JSON lines when the output is piped or
                          redirected (a log collector, a file, | jq)`;

/**
 * The format for output on a terminal (`terminal`) or not: LOG_FORMAT when set (`json` or `pretty`,
 * any case), else pretty on a terminal and JSON otherwise. Throws on another LOG_FORMAT, naming both.
 */
export function logFormat(env: NodeJS.ProcessEnv, terminal: boolean): LogFormat {
  const asked = env.LOG_FORMAT?.trim().toLowerCase();
  if (asked === 'json' || asked === 'pretty') return asked;
  if (asked) throw new Error(`LOG_FORMAT must be json or pretty, not "${env.LOG_FORMAT}"`);
  return terminal ? 'pretty' : 'json';
}

/**
 * Where a logger writes: file descriptor `fd` (1 stdout, 2 stderr), as JSON lines or pretty per
 * logFormat — the terminal test is `isatty(fd)`, which works in worker threads and cluster processes
 * too (they write to the same descriptor). Writes are synchronous either way, so the last lines before
 * an exit are not lost. Colours only on a terminal.
 */
export function logDestination(fd: number, env: NodeJS.ProcessEnv = process.env): DestinationStream {
  const terminal = isatty(fd);
  if (logFormat(env, terminal) === 'json') return pino.destination({ dest: fd, sync: true });
  return pinoPretty({
    destination: fd,
    sync: true,
    colorize: terminal,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    singleLine: false,
  });
}
