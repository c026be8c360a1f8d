// redlock 5's package.json "exports" hides its own typings from NodeNext resolution; this declares
// the part of its API the benchmark uses (same signatures as node_modules/redlock/dist/index.d.ts).
declare module 'redlock' {
  import type { Cluster, Redis } from 'ioredis';

  export class ExecutionError extends Error {}

  export interface Lock {
    release(): Promise<unknown>;
  }

  export default class Redlock {
    constructor(clients: Iterable<Redis | Cluster>, settings?: Partial<Record<string, number>>);
    acquire(resources: string[], duration: number): Promise<Lock>;
  }
}
