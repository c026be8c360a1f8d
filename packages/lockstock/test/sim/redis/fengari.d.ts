/**
 * The part of fengari (a Lua 5.3 VM in JavaScript; no typings of its own) that lua-vm.ts uses.
 * Lua strings are byte arrays; `to_luastring` / `to_jsstring` convert (UTF-8).
 */
declare module 'fengari' {
  type LuaState = object;
  type LuaString = Uint8Array;
  type CFunction = (L: LuaState) => number;

  interface Lua {
    LUA_OK: number;
    LUA_TNIL: number;
    LUA_TBOOLEAN: number;
    LUA_TNUMBER: number;
    LUA_TSTRING: number;
    LUA_TTABLE: number;
    LUA_REGISTRYINDEX: number;
    LUA_MASKCOUNT: number;
    LUA_MULTRET: number;
    lua_gettop(L: LuaState): number;
    lua_settop(L: LuaState, index: number): void;
    lua_pop(L: LuaState, n: number): void;
    lua_type(L: LuaState, index: number): number;
    lua_tonumber(L: LuaState, index: number): number;
    lua_isinteger(L: LuaState, index: number): boolean;
    lua_tolstring(L: LuaState, index: number): LuaString;
    lua_toboolean(L: LuaState, index: number): boolean;
    lua_pushnil(L: LuaState): void;
    lua_pushboolean(L: LuaState, b: boolean): void;
    lua_pushinteger(L: LuaState, n: number): void;
    lua_pushnumber(L: LuaState, n: number): void;
    lua_pushstring(L: LuaState, s: LuaString): void;
    lua_pushcfunction(L: LuaState, fn: CFunction): void;
    lua_pushvalue(L: LuaState, index: number): void;
    lua_pushglobaltable(L: LuaState): void;
    lua_createtable(L: LuaState, narr: number, nrec: number): void;
    lua_setfield(L: LuaState, index: number, key: LuaString): void;
    lua_getfield(L: LuaState, index: number, key: LuaString): number;
    lua_setglobal(L: LuaState, name: LuaString): void;
    lua_getglobal(L: LuaState, name: LuaString): number;
    lua_rawseti(L: LuaState, index: number, i: number): void;
    lua_rawgeti(L: LuaState, index: number, i: number): number;
    lua_rawset(L: LuaState, index: number): void;
    lua_setmetatable(L: LuaState, index: number): void;
    lua_pcall(L: LuaState, nargs: number, nresults: number, msgh: number): number;
    lua_error(L: LuaState): never;
    lua_sethook(L: LuaState, hook: ((L: LuaState) => void) | null, mask: number, count: number): void;
  }

  interface LuaLib {
    luaL_newstate(): LuaState;
    luaL_loadbuffer(L: LuaState, buffer: LuaString, size: null, chunkname: LuaString): number;
    luaL_ref(L: LuaState, t: number): number;
    luaL_error(L: LuaState, message: LuaString): never;
  }

  interface LuaLibs {
    luaL_openlibs(L: LuaState): void;
  }

  const fengari: {
    lua: Lua;
    lauxlib: LuaLib;
    lualib: LuaLibs;
    to_luastring(s: string): LuaString;
    to_jsstring(s: LuaString): string;
  };
  export default fengari;
}
