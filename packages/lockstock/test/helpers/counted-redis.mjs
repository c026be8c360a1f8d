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
  // A command sent before the connection is ready waits in ioredis' offline queue, which sends it
  // again through this same method once connected: each command counts once, and the hook runs when
  // it is written (a script counted twice made a test see a herd that was not there).
  const counted = new WeakSet();
  const original = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    const writing = redis.status === 'ready';
    const reply = original(command, stream);
    if (command.name === 'evalsha' || command.name === 'eval') {
      if (!counted.has(command)) {
        counted.add(command);
        sent++;
        inFlight++;
        const done = () => {
          inFlight--;
          check();
        };
        command.promise.then(done, done);
      }
      if (writing) {
        const run = hook;
        hook = undefined;
        run?.();
      }
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
