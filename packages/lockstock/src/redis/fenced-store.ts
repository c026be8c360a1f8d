import type { RedisClient } from './connection.js';
import { assertKeyName, DEFAULT_KEY_PREFIX } from './keys.js';
import { loadLuaScript, ScriptRunner } from './scripts.js';
import { assertFence } from '../backend/index.js';
import { type Fence, type FencedClaim, type FencedStore } from '../locks/fencing/fence.js';

const fencedWrite = loadLuaScript(new URL('./lua/fenced-write.lua', import.meta.url));
const fencedClaim = loadLuaScript(new URL('./lua/fenced-claim.lua', import.meta.url));

/** A string store in Redis that rejects stale writers by (token, owner); see fence.ts. */
export class RedisFencedStore implements FencedStore<string> {
  private readonly scripts: ScriptRunner;

  constructor(
    private readonly redis: RedisClient,
    private readonly keyPrefix = DEFAULT_KEY_PREFIX,
  ) {
    this.scripts = new ScriptRunner(redis);
  }

  private keys(key: string): [string, string] {
    assertKeyName('Fenced key', key);
    const base = `${this.keyPrefix}:{fenced:${key}}`;
    return [base, `${base}:fence`];
  }

  async write(key: string, value: string, fence: Fence): Promise<boolean> {
    assertFence(fence);
    const reply = await this.scripts.run(fencedWrite, this.keys(key), [
      value,
      fence.fencingToken,
      fence.owner,
    ]);
    return reply === 1;
  }

  async claim(key: string, fence: Fence): Promise<FencedClaim<string>> {
    assertFence(fence);
    const reply = (await this.scripts.run(fencedClaim, this.keys(key), [
      fence.fencingToken,
      fence.owner,
    ])) as [number, string | null];
    return reply[0] === 1 ? { granted: true, value: reply[1] ?? undefined } : { granted: false };
  }

  async read(key: string): Promise<string | undefined> {
    return (await this.redis.get(this.keys(key)[0])) ?? undefined;
  }
}
