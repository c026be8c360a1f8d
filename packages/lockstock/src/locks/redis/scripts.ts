import { loadLuaScript } from '../../redis/scripts.js';
import type { LockScripts } from './base.js';

export const mutexScripts: LockScripts = {
  acquire: loadLuaScript(new URL('./mutex-acquire.lua', import.meta.url)),
  release: loadLuaScript(new URL('./mutex-release.lua', import.meta.url)),
  extend: loadLuaScript(new URL('./mutex-extend.lua', import.meta.url)),
};

export const reentrantScripts: LockScripts = {
  acquire: loadLuaScript(new URL('./reentrant-acquire.lua', import.meta.url)),
  release: loadLuaScript(new URL('./reentrant-release.lua', import.meta.url)),
  extend: loadLuaScript(new URL('./reentrant-extend.lua', import.meta.url)),
};

export const forceUnlockScript = loadLuaScript(new URL('./force-unlock.lua', import.meta.url));
