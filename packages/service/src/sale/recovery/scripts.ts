import { loadLuaScript } from 'lockstock/redis';

const lua = (name: string) => loadLuaScript(new URL(`./lua/${name}.lua`, import.meta.url));

/** Recovery's Redis scripts (see each file's header). */
export const recoveryScripts = {
  inspect: lua('inspect'),
  begin: lua('begin'),
  rebuildBuyers: lua('rebuild-buyers'),
  rebuildSettled: lua('rebuild-settled'),
  rebuildKeys: lua('rebuild-keys'),
  finish: lua('finish'),
};
