import type { LockClient } from 'lockstock';
import type { ContractSubject } from 'lockstock/testing';
import type { RedisClientKind } from './redis-clients.mjs';

export type Subject = ContractSubject;

export type BackendConfig =
  | {
      kind: 'redis';
      url: string;
      client?: RedisClientKind;
      watchdogTimeoutMs?: number;
      waiterTimeoutMs?: number;
      holderMetadata?: boolean;
    }
  | {
      kind: 'redis-sentinel';
      sentinels: Array<{ host: string; port: number }>;
      name: string;
      client?: RedisClientKind;
      watchdogTimeoutMs?: number;
      holderMetadata?: boolean;
    }
  | {
      kind: 'redis-cluster';
      nodes: Array<{ host: string; port: number }>;
      client?: RedisClientKind;
      watchdogTimeoutMs?: number;
      holderMetadata?: boolean;
    }
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

export declare const SUBJECTS: Readonly<Record<string, Subject>>;
export declare function connect(backend: BackendConfig): LockClient;
