import { createHash } from 'node:crypto';
import { LuaScripting } from './lua-vm.js';
import { RedisError, RedisModel, type Reply } from './model.js';

/** What a script did, as the server saw it: for the simulation's history (queued, offered). */
export interface ScriptRun {
  readonly sha1: string;
  readonly keys: readonly string[];
  readonly args: readonly string[];
  readonly reply: Reply | undefined;
}

/**
 * The simulated Redis server: the command model, the script cache (EVAL loads, EVALSHA runs,
 * NOSCRIPT when not loaded) and the embedded Lua VM, on the simulation's clock. One instance per
 * schedule, shared by every simulated client's connections.
 */
export class SimRedisServer {
  readonly model: RedisModel;
  readonly scripting: LuaScripting;
  /** Every command as it reached the server, with the true time (ms): differential.test.ts replays them. */
  readonly log: Array<{ readonly at: number; readonly name: string; readonly args: readonly string[] }> = [];

  constructor(
    private readonly clock: () => number,
    /** The script mutation's text edit, applied when a script is loaded. */
    edit?: (source: string) => string,
    /** Called after every script run (before its reply leaves the server). */
    private readonly observe: (
      run: ScriptRun,
      before: (key: string, member: string) => boolean,
    ) => void = () => undefined,
  ) {
    this.model = new RedisModel(clock);
    this.scripting = new LuaScripting(this.model, edit);
  }

  /** One command as a connection sends it (ioredis' argument shapes); throws RedisError. */
  execute(name: string, args: ReadonlyArray<string | number>): Reply {
    const strings = args.map(String);
    this.log.push({ at: this.clock(), name, args: strings });
    switch (name.toLowerCase()) {
      case 'eval': {
        const [source, ...rest] = strings as [string, ...string[]];
        const sha1 = createHash('sha1').update(source).digest('hex');
        this.scripting.load(sha1, source);
        return this.evalsha([sha1, ...rest]);
      }
      case 'evalsha':
        return this.evalsha(strings);
      case 'ping':
        return { ok: 'PONG' };
      default:
        return this.model.command(name, strings);
    }
  }

  private evalsha([sha1, count, ...rest]: readonly string[]): Reply {
    const n = Number(count);
    if (!Number.isInteger(n) || n < 0 || n > rest.length)
      throw new RedisError("ERR Number of keys can't be greater than number of args");
    const keys = rest.slice(0, n);
    const args = rest.slice(n);
    // Queue membership before the run, for the observer's "did this run queue its caller".
    const snapshot = new Map<string, boolean>();
    const before = (key: string, member: string) => {
      const id = `${key}\n${member}`;
      return snapshot.get(id) ?? false;
    };
    for (const key of keys)
      for (const member of args.slice(0, 1)) {
        try {
          snapshot.set(`${key}\n${member}`, this.model.zscore(key, member) !== null);
        } catch {
          // not a sorted set: never a queue
        }
      }
    let reply: Reply | undefined;
    try {
      reply = this.scripting.evalsha(sha1!, keys, args);
      return reply;
    } finally {
      this.observe({ sha1: sha1!, keys, args, reply }, before);
    }
  }
}
