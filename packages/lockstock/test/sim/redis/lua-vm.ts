import { createRequire } from 'node:module';
import type Fengari from 'fengari';
import { formatDouble, RedisError, type RedisModel, type Reply } from './model.js';

// fengari reads its configuration from the environment once, when it is loaded: integral floats then
// print as Lua 5.1 prints them ("2", not 5.3's "2.0"). Loaded here, after setting it, for that reason.
process.env.FENGARICONF = JSON.stringify({ LUA_COMPAT_FLOATSTRING: true });
const fengari = createRequire(import.meta.url)('fengari') as typeof Fengari;
const { lua, lauxlib, lualib, to_luastring: bytes, to_jsstring: text } = fengari;
type LuaState = ReturnType<typeof lauxlib.luaL_newstate>;

/**
 * Redis's scripting environment over fengari (Lua 5.3 in JavaScript), as close to Redis 7's Lua 5.1
 * as the scripts need: `redis.call` / `redis.pcall` into the model, `redis.error_reply`,
 * `redis.status_reply`, `KEYS` / `ARGV`, the 5.1 global `unpack`, no `io` / `os` / `package`, and
 * Redis's guard against globals (a script may neither create nor read an undefined global). Replies
 * cross as Redis converts them:
 * - Lua → RESP: a number becomes an integer (truncated), a string a bulk string, true 1, false and
 *   nil a nil, `{err=…}` an error, `{ok=…}` a status, any other table an array up to its first nil.
 * - RESP → Lua: an integer a number, a bulk string a string, a nil false, an array a table, a status
 *   `{ok=…}`, an error `{err=…}` (redis.pcall) or a raised error (redis.call).
 * - Arguments to redis.call: strings as they are, numbers printed as Redis prints them (`%.17g`).
 *
 * Where Lua 5.3 differs from 5.1 in a way the scripts could notice (a float's `tostring` is "2.0"
 * in 5.3, "2" in 5.1; `string.format('%d')` refuses a fractional float in 5.3), the differential test
 * against a real Redis (differential.test.ts) is what would tell: it runs every script on both.
 *
 * Scripts run atomically, as in Redis: fengari runs them synchronously, nothing else interleaves.
 */
export class LuaScripting {
  private readonly L: LuaState;
  /** Compiled scripts by SHA-1 (Redis's script cache: SCRIPT FLUSH / a restart empties it). */
  private readonly cache = new Map<string, number>();

  constructor(
    private readonly model: RedisModel,
    /** Applied to a script's source when it is loaded (EVAL): the simulation's script mutations. */
    private readonly edit: (source: string) => string = (source) => source,
  ) {
    const L = lauxlib.luaL_newstate();
    this.L = L;
    lualib.luaL_openlibs(L);
    for (const name of ['io', 'os', 'package', 'utf8', 'require', 'dofile', 'loadfile']) {
      lua.lua_pushnil(L);
      lua.lua_setglobal(L, bytes(name));
    }
    this.installRedis();
    this.run(
      `unpack = table.unpack
       loadstring = load
       -- Numbers are doubles in Lua 5.1, as in Redis: replies and tonumber() give floats here too
       -- (fengari's integers are 32 bits wide, and wrap where 5.1's doubles would not).
       local to_number = tonumber
       tonumber = function(value, base)
         local n = to_number(value, base)
         if math.type(n) == 'integer' then return n + 0.0 end
         return n
       end
       -- 5.1's string.format casts a number to an integer for %d (C's truncation); 5.3 refuses a
       -- fractional float, and fengari any beyond 32 bits: such a spec is printed from the
       -- truncated value's digits instead.
       local format = string.format
       string.format = function(fmt, ...)
         local args = table.pack(...)
         local i = 0
         local rewritten = string.gsub(fmt, '%%([-+ #0]*%d*%.?%d*)(.)', function(flags, spec)
           if spec == '%' then return nil end
           i = i + 1
           local v = args[i]
           if (spec == 'd' or spec == 'i') and type(v) == 'number' then
             v = v >= 0 and math.floor(v) or math.ceil(v)
             args[i] = format('%.0f', v)
             return '%' .. flags .. 's'
           end
           return nil
         end)
         return format(rewritten, table.unpack(args, 1, args.n))
       end
       setmetatable(_G, {
         __newindex = function(_, name) error("Script attempted to create global variable '" .. tostring(name) .. "'", 2) end,
         __index = function(_, name) error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2) end,
       })`,
    );
    // Redis stops a script that runs too long (busy-script); here a mutated script's endless loop
    // fails its call instead of hanging the simulation.
    lua.lua_sethook(
      L,
      (state) => lauxlib.luaL_error(state, bytes('script ran past the instruction limit (an endless loop?)')),
      lua.LUA_MASKCOUNT,
      5_000_000,
    );
  }

  /** Whether the script is cached (EVALSHA answers NOSCRIPT otherwise). */
  has(sha1: string): boolean {
    return this.cache.has(sha1);
  }

  /** EVAL's load: compiles `source` (edited) under `sha1`. Throws RedisError on a syntax error. */
  load(sha1: string, source: string): void {
    if (this.cache.has(sha1)) return;
    const { L } = this;
    const status = lauxlib.luaL_loadbuffer(L, bytes(this.edit(source)), null, bytes('@user_script'));
    if (status !== lua.LUA_OK) {
      const message = text(lua.lua_tolstring(L, -1));
      lua.lua_pop(L, 1);
      throw new RedisError(`ERR Error compiling script (new function): ${message}`);
    }
    this.cache.set(sha1, lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX));
  }

  flush(): void {
    this.cache.clear();
  }

  /** EVALSHA: runs a cached script. Throws RedisError (NOSCRIPT, or the script's error reply). */
  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Reply {
    const ref = this.cache.get(sha1);
    if (ref === undefined) throw new RedisError('NOSCRIPT No matching script. Please use EVAL.');
    const { L } = this;
    this.setArray('KEYS', keys);
    this.setArray('ARGV', args);
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, ref);
    const status = lua.lua_pcall(L, 0, 1, 0);
    try {
      if (status !== lua.LUA_OK) throw new RedisError(this.errorOf(-1));
      return this.toReply(-1);
    } finally {
      lua.lua_settop(L, 0);
    }
  }

  /** Runs a chunk of setup code (not a script: no KEYS, no reply). */
  private run(code: string): void {
    const { L } = this;
    if (
      lauxlib.luaL_loadbuffer(L, bytes(code), null, bytes('=setup')) !== lua.LUA_OK ||
      lua.lua_pcall(L, 0, 0, 0) !== lua.LUA_OK
    ) {
      throw new Error(`Lua setup failed: ${text(lua.lua_tolstring(L, -1))}`);
    }
  }

  /** Sets the global `name` to an array of strings, past the globals guard (rawset). */
  private setArray(name: string, values: readonly string[]): void {
    const { L } = this;
    lua.lua_pushglobaltable(L);
    lua.lua_pushstring(L, bytes(name));
    lua.lua_createtable(L, values.length, 0);
    values.forEach((value, i) => {
      lua.lua_pushstring(L, bytes(value));
      lua.lua_rawseti(L, -2, i + 1);
    });
    lua.lua_rawset(L, -3);
    lua.lua_pop(L, 1);
  }

  /** A raised error's message: an `{err=…}` table's field, or the error string itself. */
  private errorOf(index: number): string {
    const { L } = this;
    if (lua.lua_type(L, index) === lua.LUA_TTABLE) {
      lua.lua_getfield(L, index, bytes('err'));
      const message =
        lua.lua_type(L, -1) === lua.LUA_TSTRING ? text(lua.lua_tolstring(L, -1)) : 'ERR unknown error';
      lua.lua_pop(L, 1);
      return message;
    }
    const raw =
      lua.lua_type(L, index) === lua.LUA_TSTRING ? text(lua.lua_tolstring(L, index)) : 'unknown error';
    return `ERR ${raw}`;
  }

  /** The Lua value at `index` as Redis converts a script's reply (see the class comment). */
  private toReply(index: number): Reply {
    const { L } = this;
    switch (lua.lua_type(L, index)) {
      case lua.LUA_TSTRING:
        return text(lua.lua_tolstring(L, index));
      case lua.LUA_TNUMBER:
        return Math.trunc(lua.lua_tonumber(L, index));
      case lua.LUA_TBOOLEAN:
        return lua.lua_toboolean(L, index) ? 1 : null;
      case lua.LUA_TTABLE:
        return this.tableReply(index < 0 ? lua.lua_gettop(L) + index + 1 : index);
      default:
        return null;
    }
  }

  private tableReply(at: number): Reply {
    const { L } = this;
    lua.lua_getfield(L, at, bytes('err'));
    if (lua.lua_type(L, -1) === lua.LUA_TSTRING) {
      const message = text(lua.lua_tolstring(L, -1));
      lua.lua_pop(L, 1);
      throw new RedisError(message);
    }
    lua.lua_pop(L, 1);
    lua.lua_getfield(L, at, bytes('ok'));
    if (lua.lua_type(L, -1) === lua.LUA_TSTRING) {
      const ok = text(lua.lua_tolstring(L, -1));
      lua.lua_pop(L, 1);
      return { ok };
    }
    lua.lua_pop(L, 1);
    const out: Reply[] = [];
    for (let i = 1; ; i++) {
      if (lua.lua_rawgeti(L, at, i) === lua.LUA_TNIL) {
        lua.lua_pop(L, 1);
        return out;
      }
      out.push(this.toReply(-1));
      lua.lua_pop(L, 1);
    }
  }

  /** Pushes a model reply as Redis hands a command's reply to Lua (see the class comment). */
  private push(reply: Reply): void {
    const { L } = this;
    if (reply === null) lua.lua_pushboolean(L, false);
    else if (typeof reply === 'string') lua.lua_pushstring(L, bytes(reply));
    else if (typeof reply === 'number')
      lua.lua_pushnumber(L, reply); // a double, as in Redis's 5.1
    else if (Array.isArray(reply)) {
      lua.lua_createtable(L, reply.length, 0);
      reply.forEach((item, i) => {
        this.push(item);
        lua.lua_rawseti(L, -2, i + 1);
      });
    } else this.pushField('ok', reply.ok);
  }

  private pushField(field: 'ok' | 'err', value: string): void {
    const { L } = this;
    lua.lua_createtable(L, 0, 1);
    lua.lua_pushstring(L, bytes(value));
    lua.lua_setfield(L, -2, bytes(field));
  }

  /** redis.call (raise) and redis.pcall: one command of the model, from Lua's arguments. */
  private command(L: LuaState, raise: boolean): number {
    const count = lua.lua_gettop(L);
    const args: string[] = [];
    let refused: string | undefined;
    if (count === 0) refused = 'ERR Please specify at least one argument for this redis lib call';
    for (let i = 1; i <= count && refused === undefined; i++) {
      const type = lua.lua_type(L, i);
      if (type === lua.LUA_TSTRING) args.push(text(lua.lua_tolstring(L, i)));
      else if (type === lua.LUA_TNUMBER) args.push(formatDouble(lua.lua_tonumber(L, i)));
      else refused = 'ERR Lua redis lib command arguments must be strings or integers';
    }
    let reply: Reply | undefined;
    if (refused === undefined) {
      try {
        reply = this.model.command(args[0]!, args.slice(1));
      } catch (error) {
        if (!(error instanceof RedisError)) throw error;
        refused = error.message;
      }
    }
    if (refused !== undefined) {
      this.pushField('err', refused);
      if (raise) lua.lua_error(L);
      return 1;
    }
    this.push(reply!);
    return 1;
  }

  private installRedis(): void {
    const { L } = this;
    lua.lua_createtable(L, 0, 8);
    const fields: Record<string, (state: LuaState) => number> = {
      call: (state) => this.command(state, true),
      pcall: (state) => this.command(state, false),
      error_reply: (state) => {
        this.pushField('err', text(lua.lua_tolstring(state, 1)));
        return 1;
      },
      status_reply: (state) => {
        this.pushField('ok', text(lua.lua_tolstring(state, 1)));
        return 1;
      },
      log: () => 0,
    };
    for (const [name, fn] of Object.entries(fields)) {
      lua.lua_pushcfunction(L, fn);
      lua.lua_setfield(L, -2, bytes(name));
    }
    for (const [name, level] of [
      ['LOG_DEBUG', 0],
      ['LOG_VERBOSE', 1],
      ['LOG_NOTICE', 2],
      ['LOG_WARNING', 3],
    ] as const) {
      lua.lua_pushinteger(L, level);
      lua.lua_setfield(L, -2, bytes(name));
    }
    lua.lua_setglobal(L, bytes('redis'));
  }
}
