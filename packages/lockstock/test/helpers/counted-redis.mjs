// A real ioredis connection that counts the lock scripts it sends (EVALSHA/EVAL) and can run a hook
// right after one is written to the socket: instrumentation of the client under test, not a stand-in
// for the server. Plain JavaScript, so fixture processes use it too.
import { Redis } from 'ioredis';

/** @returns {import('./counted-redis.d.mts').CountedRedis} */
export function countedRedis(url) {
  const redis = new Redis(url);
  let sent = 0;
  let inFlight = 0;
  let hook;
  const settled = [];
  const idle = (count) => sent >= count && inFlight === 0;
  const check = () => {
    for (const entry of [...settled]) {
      if (!idle(entry.count)) continue;
      // A macrotask later (the caller's reaction to the reply — going to sleep, a NOSCRIPT retry —
      // has run by then), and only if still idle.
      setImmediate(() => {
        if (!settled.includes(entry) || !idle(entry.count)) return;
        settled.splice(settled.indexOf(entry), 1);
        entry.resolve();
      });
    }
  };
  const original = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    const reply = original(command, stream);
    if (command.name === 'evalsha' || command.name === 'eval') {
      sent++;
      inFlight++;
      const done = () => {
        inFlight--;
        check();
      };
      command.promise.then(done, done);
      const run = hook;
      hook = undefined;
      run?.();
    }
    return reply;
  };
  return {
    redis,
    get sent() {
      return sent;
    },
    get inFlight() {
      return inFlight;
    },
    afterNextScript(next) {
      hook = next;
    },
    settledAfter(count) {
      return new Promise((resolve) => {
        settled.push({ count, resolve });
        check();
      });
    },
  };
}
