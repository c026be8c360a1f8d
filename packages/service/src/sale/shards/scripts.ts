import { loadLuaScript } from 'lockstock/redis';

const script = (name: string) => loadLuaScript(new URL(`./lua/${name}.lua`, import.meta.url));

/** The scripts of split sales (see each file's header); each touches one part's slot. */
export const partScripts = {
  reserve: script('reserve-part'),
  reserveIdempotent: script('reserve-part-idempotent'),
  warm: script('warm-part'),
  settle: script('settle-part'),
  expire: script('expire-part'),
  transferOut: script('transfer-out'),
  transferIn: script('transfer-in'),
  transferDone: script('transfer-done'),
  rebuildTransfers: script('rebuild-transfers'),
  restoreLostCredit: script('restore-lost-credit'),
  snapshot: script('part-snapshot'),
  state: script('part-state'),
};
