import type { Database, QueryResult, Queryable } from './db.js';

/**
 * A Database in another thread or process, over a message link: the embedded order store (PGlite,
 * WASM) runs in the order thread, off the HTTP event loop, and the HTTP side still sees the one
 * Database interface; `serve --processes N` relays the same messages to its HTTP processes.
 * Transactions work across the link too (begin, statements tagged with the transaction, commit or
 * rollback); the owning side runs each inside the database's own transaction.
 */

/**
 * Either end of a link that carries structured-clone messages: a worker_threads MessagePort, or a
 * process IPC channel shaped like one (ProcessLink in cli/serve-ipc.ts). 'close' fires on both ends
 * when either closes or goes away.
 */
export interface MessageLink {
  postMessage(message: unknown): void;
  /** 'message' (with the message) and 'close' (without). */
  on(event: string, listener: (message: unknown) => void): unknown;
  off(event: string, listener: (message: unknown) => void): unknown;
  close(): void;
}

type Request =
  | { id: number; op: 'query'; sql: string; params?: unknown[]; tx?: number }
  | { id: number; op: 'exec'; sql: string; tx?: number }
  | { id: number; op: 'begin' }
  | { id: number; op: 'commit' | 'rollback'; tx: number };

/** A request before it gets its id (Omit of each member of the union). */
type Unsent = Request extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

type Response =
  | { id: number; ok: true; result?: QueryResult<unknown> | number }
  | { id: number; ok: false; error: SerializedError };

/** What survives the port of a database error: enough to classify it (isTransient) and report it. */
interface SerializedError {
  name: string;
  message: string;
  code?: string;
  detail?: string;
  constraint?: string;
}

/** Thrown on the calling side when the owning side's database refused or failed a request. */
export class RemoteDatabaseError extends Error {
  override readonly name = 'RemoteDatabaseError';
  readonly code: string | undefined;
  readonly detail: string | undefined;
  readonly constraint: string | undefined;

  constructor(error: SerializedError) {
    super(error.message);
    this.code = error.code;
    this.detail = error.detail;
    this.constraint = error.constraint;
  }
}

function serialize(error: unknown): SerializedError {
  const e = error as Partial<SerializedError> & { message?: unknown };
  return {
    name: typeof e.name === 'string' ? e.name : 'Error',
    message: typeof e.message === 'string' ? e.message : String(error),
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    ...(typeof e.detail === 'string' ? { detail: e.detail } : {}),
    ...(typeof e.constraint === 'string' ? { constraint: e.constraint } : {}),
  };
}

/** The calling side. `kind` is the owning side's database kind. */
export function remoteDatabase(port: MessageLink, kind: Database['kind']): Database {
  let nextId = 1;
  let closed: Error | undefined;
  const waiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  port.on('message', (message) => {
    const response = message as Response;
    const call = waiting.get(response.id);
    if (!call) return;
    waiting.delete(response.id);
    if (response.ok) call.resolve(response.result);
    else call.reject(new RemoteDatabaseError(response.error));
  });
  port.on('close', () => {
    closed = new RemoteDatabaseError({
      name: 'Error',
      message: 'the order store thread is gone',
      code: '57P01', // admin shutdown: transient, and a dependency down (503) for the HTTP layer
    });
    for (const call of waiting.values()) call.reject(closed);
    waiting.clear();
  });
  const send = <T>(request: Unsent): Promise<T> => {
    if (closed) return Promise.reject(closed);
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      port.postMessage({ ...request, id });
    });
  };
  const queryable = (tx?: number): Queryable => ({
    query: <R>(sql: string, params?: unknown[]) =>
      send<QueryResult<R>>({ op: 'query', sql, ...(params ? { params } : {}), ...(tx ? { tx } : {}) }),
    exec: async (sql: string) => void (await send({ op: 'exec', sql, ...(tx ? { tx } : {}) })),
  });
  return {
    kind,
    ...queryable(),
    async transaction(fn) {
      const tx = await send<number>({ op: 'begin' });
      let result;
      try {
        result = await fn(queryable(tx));
      } catch (error) {
        await send({ op: 'rollback', tx }).catch(() => undefined); // the thread may be gone already
        throw error;
      }
      await send({ op: 'commit', tx });
      return result;
    },
    close: async () => port.close(),
  };
}

interface OpenTransaction {
  readonly tx: Queryable;
  /** Commits or rolls back; resolves when the transaction has ended (rejects if the commit failed). */
  end(commit: boolean): Promise<void>;
}

const ROLLBACK = new Error('rolled back by the caller');

/** Opens a transaction of `db` that stays open until `end` is called. */
function openTransaction(db: Database): Promise<OpenTransaction> {
  return new Promise((opened, failed) => {
    let decide!: (commit: boolean) => void;
    const decision = new Promise<boolean>((resolve) => (decide = resolve));
    const ended: Promise<void> = db
      .transaction(async (tx) => {
        opened({ tx, end: (commit) => (decide(commit), ended) });
        if (!(await decision)) throw ROLLBACK;
      })
      .catch((error: unknown) => {
        if (error !== ROLLBACK) throw error;
      });
    ended.catch(failed); // only matters if it failed before it opened
  });
}

/**
 * The owning side: answers requests arriving on `port` with `db`. Returns a function that stops
 * answering (open transactions are rolled back).
 */
export function serveDatabase(port: MessageLink, db: Database): () => void {
  let nextTx = 1;
  const open = new Map<number, OpenTransaction>();
  const target = (tx?: number): Queryable => {
    if (tx === undefined) return db;
    const found = open.get(tx);
    if (!found) throw new Error(`no open transaction ${tx}`);
    return found.tx;
  };
  const handle = async (request: Request): Promise<QueryResult<unknown> | number | undefined> => {
    switch (request.op) {
      case 'query':
        return target(request.tx).query(request.sql, request.params);
      case 'exec':
        return void (await target(request.tx).exec(request.sql));
      case 'begin': {
        const id = nextTx++;
        open.set(id, await openTransaction(db));
        return id;
      }
      case 'commit':
      case 'rollback': {
        const found = open.get(request.tx);
        if (!found) throw new Error(`no open transaction ${request.tx}`);
        open.delete(request.tx);
        return void (await found.end(request.op === 'commit'));
      }
    }
  };
  const onMessage = (message: unknown) => {
    const request = message as Request;
    handle(request).then(
      (result) => {
        const response: Response = { id: request.id, ok: true, ...(result === undefined ? {} : { result }) };
        port.postMessage(response);
      },
      (error: unknown) =>
        port.postMessage({ id: request.id, ok: false, error: serialize(error) } satisfies Response),
    );
  };
  port.on('message', onMessage);
  return () => {
    port.off('message', onMessage);
    for (const transaction of open.values()) void transaction.end(false).catch(() => undefined);
    open.clear();
  };
}
