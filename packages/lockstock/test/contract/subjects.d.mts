import type { Lock, LockClient } from 'lockstock';

export interface Subject {
  /** Holders at once: 1 exclusive, the permits of a semaphore, Infinity for readers. */
  bound: number;
  reentrant: boolean;
  /** Holds end when their holder dies (every kind but the counter semaphore). */
  leased: boolean;
  make(client: LockClient, name: string): Lock;
  /** The lock whose holds block this one and that this one blocks (read locks: the write side). */
  opposite?: (client: LockClient, name: string) => Lock;
  /** Mixed sections: the i-th section's lock and whether it must be alone ('exclusive') or not. */
  mixed?: (client: LockClient, name: string, i: number) => { mode: 'exclusive' | 'shared'; lock: Lock };
}

export type BackendConfig =
  | { kind: 'redis'; url: string; watchdogTimeoutMs?: number; waiterTimeoutMs?: number }
  | { kind: 'redis-cluster'; nodes: Array<{ host: string; port: number }>; watchdogTimeoutMs?: number }
  | { kind: 'redlock'; urls: string[]; databaseUrl: string; watchdogTimeoutMs?: number }
  | { kind: 'etcd'; hosts: string[]; sessionTtlSeconds?: number; watchdogTimeoutMs?: number }
  | {
      kind: 'zookeeper';
      connectString: string;
      sessionTimeoutMs?: number;
      watchdogTimeoutMs?: number;
      connectionLossPolicy?: 'suspended' | 'lost';
    }
  | { kind: 'postgres'; url: string; watchdogTimeoutMs?: number }
  | { kind: 'mysql'; url: string; watchdogTimeoutMs?: number }
  | { kind: 'local'; namespace: string; watchdogTimeoutMs?: number };

export declare const SUBJECTS: Record<string, Subject>;
export declare function connect(backend: BackendConfig): LockClient;
