// The lock server of the example backend: an in-memory lock table behind a TCP socket, in its own
// process. `node server.js [port]` prints {"port": N} on stdout once it listens (port 0: any free one).
//
// Protocol: one JSON object per line. A request carries `id` and `op`; its answer carries the same
// `id`. The server also pushes lines without `id`: {"wake": name} when a lock's holds shrink (to the
// connections subscribed to it; a fair lock's carries the `owner` whose turn it is, a latch's comes
// on `latch:<name>` when its count reaches zero),
// connections subscribed to it), {"lost": name, "owner": owner} when a hold was forced off.
//
// A connection is a session: every hold it took ends when it closes (its process died, or closed its
// client), and the lock's waiters are woken. Holds have no leases: nothing else ends them but
// `force` (an operator's force-unlock). Fencing tokens grow per lock name for the server's lifetime.
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';

/**
 * name → { fence, permits?, holders: Map<owner, { conn, mode, count, token }>, writers: Map<owner,
 * conn>, queue: Array<{ owner, conn }> }. Modes: 'exclusive' (mutex, reentrant, fair, write side)
 * and 'shared' (read side, semaphore permits). `writers` are the writers waiting: while one waits, no
 * new reader gets in (the docs' promise: readers cannot starve a writer). `queue` is a fair lock's
 * waiters in arrival order: only its head may take the free lock.
 */
const locks = new Map();
/** latch name → the count left (a latch at zero is not kept). */
const latches = new Map();
/** lock name → connections subscribed to its wake-ups. */
const subscribers = new Map();

const lockOf = (name) => {
  let lock = locks.get(name);
  if (!lock)
    locks.set(
      name,
      (lock = { fence: 0, permits: undefined, holders: new Map(), writers: new Map(), queue: [] }),
    );
  return lock;
};

const send = (conn, message) => {
  if (!conn.destroyed) conn.write(`${JSON.stringify(message)}\n`);
};

function wake(name) {
  const next = locks.get(name)?.queue[0];
  // A fair lock's turn is its queue head's: only that waiter need try.
  const message =
    next && locks.get(name).holders.size === 0 ? { wake: name, owner: next.owner } : { wake: name };
  for (const conn of subscribers.get(name) ?? []) send(conn, message);
}

/** Grants `owner` a new hold, or another hold on its own (re-entry keeps the token). */
function grant(lock, conn, owner, mode) {
  const held = lock.holders.get(owner);
  if (held) {
    held.count++;
    return { granted: true, token: held.token };
  }
  const token = ++lock.fence;
  lock.holders.set(owner, { conn, mode, count: 1, token });
  return { granted: true, token };
}

/**
 * One try. `kind`: 'mutex' (one holder, no re-entry), 'reentrant' (one holder, re-entry), 'write'
 * and 'read' (the two sides of a read-write lock: readers share), 'semaphore' (`permits` holders).
 */
function attempt(conn, { name, owner, kind, permits, waiting }) {
  const lock = lockOf(name);
  const mine = lock.holders.get(owner);
  const others = [...lock.holders.keys()].filter((o) => o !== owner);
  switch (kind) {
    case 'mutex':
      return lock.holders.size === 0 ? grant(lock, conn, owner, 'exclusive') : { granted: false };
    case 'reentrant':
      return others.length === 0 ? grant(lock, conn, owner, 'exclusive') : { granted: false };
    case 'fair': {
      if (mine) return grant(lock, conn, owner, 'exclusive');
      const at = lock.queue.findIndex((w) => w.owner === owner);
      if (lock.holders.size > 0 || (lock.queue.length > 0 && at !== 0)) {
        // A waiting try queues its owner once, at the end: arrival order across every connection.
        if (waiting && at < 0) lock.queue.push({ owner, conn });
        return { granted: false };
      }
      if (at === 0) lock.queue.shift();
      return grant(lock, conn, owner, 'exclusive');
    }
    case 'write':
      // A reader asking for the write side would wait for itself: refused outright.
      if (mine?.mode === 'shared') return { error: 'upgrade' };
      if (others.length === 0) {
        lock.writers.delete(owner);
        return grant(lock, conn, owner, 'exclusive');
      }
      // A writer that will wait is known from its first refusal: new readers wait behind it.
      if (waiting) lock.writers.set(owner, conn);
      return { granted: false };
    case 'read': {
      // The writer may read too (its write hold stays exclusive); others read while nobody writes.
      if (mine?.mode === 'exclusive') return { ...grant(lock, conn, owner, 'exclusive'), more: false };
      const writing = others.some((o) => lock.holders.get(o).mode === 'exclusive');
      // A reader already in may re-enter; a new one waits while a writer waits.
      const writerWaits = !mine && [...lock.writers.keys()].some((o) => o !== owner);
      return writing || writerWaits
        ? { granted: false }
        : { ...grant(lock, conn, owner, 'shared'), more: true };
    }
    case 'semaphore': {
      lock.permits ??= permits;
      if (lock.permits !== permits) return { error: 'permits', stored: lock.permits };
      if (mine || lock.holders.size < lock.permits) {
        const answer = grant(lock, conn, owner, 'shared');
        return { ...answer, more: lock.holders.size < lock.permits };
      }
      return { granted: false };
    }
    default:
      return { error: `unknown kind ${kind}` };
  }
}

function release(conn, { name, owner }) {
  const lock = lockOf(name);
  const held = lock.holders.get(owner);
  if (!held) return { outcome: lock.holders.size > 0 ? 'not_owner' : 'expired' };
  if (--held.count > 0) return { outcome: 'still_held' };
  lock.holders.delete(owner);
  wake(name);
  return { outcome: 'released' };
}

/** A waiting writer or fair waiter gave up (or won): nobody need wait for it any more. */
function leave({ name, owner }) {
  const lock = lockOf(name);
  const at = lock.queue.findIndex((w) => w.owner === owner);
  if (at >= 0) lock.queue.splice(at, 1);
  if (lock.writers.delete(owner) || at === 0) wake(name);
  return {};
}

/** A count-down latch's operations: set, count down, read, reset (an operator's force-unlock). */
function latch({ op, name, count }) {
  const left = latches.get(name) ?? 0;
  if (op === 'latchReset') {
    latches.delete(name);
    wake(`latch:${name}`);
    return { counting: left > 0 };
  }
  if (op === 'latchSet') {
    if (left > 0) return { set: false };
    latches.set(name, count);
    return { set: true };
  }
  if (op === 'latchDown') {
    if (left === 0) return { left: 0 };
    if (left > 1) latches.set(name, left - 1);
    else {
      latches.delete(name);
      wake(`latch:${name}`);
    }
    return { left: left - 1 };
  }
  return { count: left };
}

/** Ends every hold of `name`, telling each holder's connection (its hold is lost). */
function force({ name }) {
  const lock = lockOf(name);
  const held = lock.holders.size > 0;
  for (const [owner, { conn }] of lock.holders) send(conn, { lost: name, owner });
  lock.holders.clear();
  wake(name);
  return { held };
}

function answer(conn, request) {
  switch (request.op) {
    case 'attempt':
      return attempt(conn, request);
    case 'release':
      return release(conn, request);
    case 'force':
      return force(request);
    case 'leave':
      return leave(request);
    case 'latchSet':
    case 'latchDown':
    case 'latchCount':
    case 'latchReset':
      return latch(request);
    case 'inspect': {
      const holders = lockOf(request.name).holders;
      // An exclusive lock's holder and token too: the generic client's elections read their leader here.
      const [owner, held] = [...holders].find(([, h]) => h.mode === 'exclusive') ?? [];
      return { holders: holders.size, ...(held ? { holder: { owner, fencingToken: held.token } } : {}) };
    }
    case 'holdCount':
      return { count: lockOf(request.name).holders.get(request.owner)?.count ?? 0 };
    case 'subscribe': {
      let conns = subscribers.get(request.name);
      if (!conns) subscribers.set(request.name, (conns = new Set()));
      conns.add(conn);
      return {};
    }
    case 'unsubscribe':
      subscribers.get(request.name)?.delete(conn);
      return {};
    default:
      return { error: `unknown op ${request.op}` };
  }
}

/** The session ends: every hold the connection took is gone, and its locks' waiters are woken. */
function endSession(conn) {
  for (const conns of subscribers.values()) conns.delete(conn);
  for (const [name, lock] of locks) {
    let freed = false;
    for (const [owner, writer] of lock.writers) if (writer === conn) freed = lock.writers.delete(owner);
    const queued = lock.queue.length;
    lock.queue = lock.queue.filter((w) => w.conn !== conn);
    if (lock.queue.length < queued) freed = true;
    for (const [owner, held] of lock.holders) {
      if (held.conn === conn) freed = lock.holders.delete(owner);
    }
    if (freed) wake(name);
  }
}

const server = createServer((conn) => {
  conn.setNoDelay(true);
  conn.on('error', () => undefined); // a client that died: its 'close' ends the session
  conn.on('close', () => endSession(conn));
  const lines = createInterface({ input: conn });
  lines.on('error', () => undefined); // the connection's own error (a reset): its 'close' follows
  lines.on('line', (line) => {
    const request = JSON.parse(line);
    send(conn, { id: request.id, ...answer(conn, request) });
  });
});
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  console.log(JSON.stringify({ port }));
});
