import type { Client } from 'node-zookeeper-client';

export declare function fencedWrite(zk: Client, path: string, token: number, value: string): Promise<boolean>;
export declare function fencedRead(zk: Client, path: string): Promise<{ token: number; value: string }>;
