import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Command } from 'ioredis';
import { ioredis, ioredisIfInstalled } from './driver.js';
import { readAsset } from '../support/assets.js';
import type { RedisClient } from './connection.js';
import { WriteCoalescer } from './coalesce.js';

/**
 * A Lua script from a `.lua` file. Its key count is derived from the highest `KEYS[n]` it uses, or is
 * left to the caller (`variadic`) when the script reads `#KEYS`.
 */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha1: string;
  readonly keyCount: number;
  readonly variadic: boolean;
}

const INCLUDE = /^--\s*@include\s+(\S+)\s*$/gm;

/**
 * A file with its `-- @include` lines replaced by the fragments they name (relative to the file),
 * fragments' own includes too; a fragment already included is not included again.
 */
function expandIncludes(url: URL, included = new Set<string>()): string {
  return readAsset(url).replace(INCLUDE, (_line, file: string) => {
    const fragment = new URL(file, url);
    if (included.has(fragment.href)) return `-- (${file}: included above)`;
    included.add(fragment.href);
    return expandIncludes(fragment, included);
  });
}

/**
 * Loads a `.lua` file once (at module load) and fingerprints it for EVALSHA. A line
 * `-- @include fragment.lua` is replaced by that file (relative to the script), so scripts share Lua
 * functions without copy-pasted prologues; the SHA covers the expanded text.
 */
export function loadLuaScript(url: URL): LuaScript {
  const source = expandIncludes(url);
  const keyIndexes = [...source.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1]));
  return Object.freeze({
    name: fileURLToPath(url).split('/').pop() ?? String(url),
    source,
    sha1: createHash('sha1').update(source).digest('hex'),
    keyCount: keyIndexes.length === 0 ? 0 : Math.max(...keyIndexes),
    variadic: source.includes('#KEYS'),
  });
}

/** An ARGV value of a script: Redis receives every argument as a string. */
export type ScriptArg = string | number;

const isNoScript = (error: unknown) => error instanceof Error && error.message.startsWith('NOSCRIPT');

/** What ioredis' own command methods pass to a Command (see `evalshaCommand`). */
interface CommandOptions {
  replyEncoding: 'utf8';
  keyPrefix: string | undefined;
  errorStack: Error | undefined;
}

type WithOptions = RedisClient & {
  options: { keyPrefix?: string | undefined; showFriendlyErrorStack?: boolean | undefined };
  sendCommand(command: Command): Promise<unknown>;
};

/** An own `flat` for an argument list that is never nested: see `evalshaCommand`. */
function alreadyFlat<T>(this: T[]): T[] {
  return this;
}

/**
 * Runs scripts with EVALSHA and falls back to EVAL (which also re-caches the script) when Redis
 * answers NOSCRIPT — after a restart, a failover or SCRIPT FLUSH. This is the only place that does so.
 */
export class ScriptRunner {
  private readonly coalescer: WriteCoalescer;
  /** Whether commands can be built here and sent with the client's own `sendCommand`. */
  private readonly direct: boolean;

  /** What a failed script's error is turned into (see `explainError`). */
  private readonly explain: ((error: unknown) => unknown) | undefined;

  /**
   * `maxBatch`: commands written together at most before the tick ends (see WriteCoalescer).
   * `explainError`: what a script's failure is rethrown as (the lock client names the server and the
   * connection's own error when there is no connection: see `explainConnectionErrors`).
   */
  constructor(
    readonly client: RedisClient,
    options: { maxBatch?: number; explainError?: (error: unknown) => unknown } = {},
  ) {
    this.explain = options.explainError;
    this.coalescer = new WriteCoalescer(client, options.maxBatch);
    // Only for a client of the copy of ioredis lockstock imports (so that our Command is its Command).
    // A client with auto-pipelining is sent to directly too: its batching happens only in ioredis'
    // command methods, and it sends a tick's batch only once the previous batch's replies are all in,
    // so lock scripts queued there ran in lockstep (measured: half the uncontended pairs/s).
    // (A node-redis or iovalkey client, or no ioredis installed at all: through the client's methods.)
    const own = ioredisIfInstalled();
    this.direct = own !== undefined && (client instanceof own.Redis || client instanceof own.Cluster);
  }

  /**
   * Runs `script` with `keys` and `args`: EVALSHA, batched with the tick's other commands, then EVAL
   * if Redis does not have the script cached. Resolves with the script's reply; rejects with Redis'
   * error (as `explainError` rewrites it), or throws RangeError at once when `keys` does not match
   * the script's key count.
   */
  run(script: LuaScript, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    if (script.variadic ? keys.length < script.keyCount : keys.length !== script.keyCount) {
      throw new RangeError(`${script.name} takes ${script.keyCount} keys, got ${keys.length}`);
    }
    const client = this.client;
    const count = keys.length;
    const reply = this.direct
      ? this.coalescer.sendCommand(client as WithOptions, this.evalshaCommand(script.sha1, count, keys, args))
      : this.coalescer.send(() => client.evalsha(script.sha1, count, ...keys, ...args));
    return reply.catch((error: unknown) => {
      if (!isNoScript(error)) throw this.explain ? this.explain(error) : error;
      return client.eval(script.source, count, ...keys, ...args);
    });
  }

  /**
   * Sends one plain command (no script) the same way: built here and written through the coalescer
   * on a client of lockstock's ioredis, else through the client's `call`. For a command a script
   * would only wrap (Redlock's `SET NX PX`: EVALSHA costs Redis more than the command it runs).
   */
  command(name: string, args: readonly ScriptArg[]): Promise<unknown> {
    if (!this.direct) return this.coalescer.send(() => this.client.call(name, ...args));
    return this.coalescer.sendCommand(this.client as WithOptions, this.buildCommand(name, [...args]));
  }

  /**
   * The EVALSHA command ioredis' `evalsha()` would build, minus its most expensive step: its Command
   * copies the arguments with `Array.prototype.flat()`, which on Node 20 costs ~90 ns per element —
   * about 1 µs for a lock script's nine, most of what a command costs the client. The argument list
   * built here is never nested, so it carries an own `flat` that returns it as it is (the Command
   * then owns the array, which is fresh per call). Everything else is what `evalsha()` passes.
   */
  private evalshaCommand(
    sha1: string,
    count: number,
    keys: readonly string[],
    args: readonly ScriptArg[],
  ): Command {
    return this.buildCommand('evalsha', [sha1, count, ...keys, ...args]);
  }

  /** A Command over a fresh, never nested argument list that carries its own `flat` (see above). */
  private buildCommand(name: string, list: ScriptArg[]): Command {
    // A plain assignment: `Object.defineProperty` on an array costs ~0.4 µs more per command.
    (list as unknown as { flat: typeof alreadyFlat }).flat = alreadyFlat;
    const { keyPrefix, showFriendlyErrorStack } = (this.client as WithOptions).options;
    const options: CommandOptions = {
      replyEncoding: 'utf8',
      keyPrefix,
      errorStack: showFriendlyErrorStack ? new Error() : undefined,
    };
    return new (ioredis().Command)(name, list, options);
  }
}
