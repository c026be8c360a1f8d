import { createHash } from 'node:crypto';
import { readAsset } from '../support/assets.js';
import { fileURLToPath } from 'node:url';
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
 * Loads a `.lua` file once (at module load) and fingerprints it for EVALSHA. A line
 * `-- @include fragment.lua` is replaced by that file (relative to the script), so scripts share Lua
 * functions without copy-pasted prologues; the SHA covers the expanded text.
 */
export function loadLuaScript(url: URL): LuaScript {
  const source = readAsset(url).replace(INCLUDE, (_line, file: string) => readAsset(new URL(file, url)));
  const keyIndexes = [...source.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1]));
  return Object.freeze({
    name: fileURLToPath(url).split('/').pop() ?? String(url),
    source,
    sha1: createHash('sha1').update(source).digest('hex'),
    keyCount: keyIndexes.length === 0 ? 0 : Math.max(...keyIndexes),
    variadic: source.includes('#KEYS'),
  });
}

export type ScriptArg = string | number;

const isNoScript = (error: unknown) => error instanceof Error && error.message.startsWith('NOSCRIPT');

/**
 * Runs scripts with EVALSHA and falls back to EVAL (which also re-caches the script) when Redis
 * answers NOSCRIPT — after a restart, a failover or SCRIPT FLUSH. This is the only place that does so.
 */
export class ScriptRunner {
  private readonly coalescer: WriteCoalescer;

  constructor(readonly client: RedisClient) {
    this.coalescer = new WriteCoalescer(client);
  }

  run(script: LuaScript, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    if (script.variadic ? keys.length < script.keyCount : keys.length !== script.keyCount) {
      throw new RangeError(`${script.name} takes ${script.keyCount} keys, got ${keys.length}`);
    }
    const client = this.client;
    const count = keys.length;
    return this.coalescer
      .send(() => client.evalsha(script.sha1, count, ...keys, ...args))
      .catch((error: unknown) => {
        if (!isNoScript(error)) throw error;
        return client.eval(script.source, count, ...keys, ...args);
      });
  }
}
