import { loadLuaScript } from 'lockstock/redis';

/** The lab's exhibit scripts (lockstock's own rules live in locks/ and sale/). */
export const labScripts = {
  takeGetSet: loadLuaScript(new URL('./take-get-set.lua', import.meta.url)),
  takeHashAllOrNothing: loadLuaScript(new URL('./take-hash-all-or-nothing.lua', import.meta.url)),
  takeSegment: loadLuaScript(new URL('./take-segment.lua', import.meta.url)),
  takeSegmentOnce: loadLuaScript(new URL('./take-segment-once.lua', import.meta.url)),
  releaseIfOwner: loadLuaScript(new URL('./release-if-owner.lua', import.meta.url)),
};
