import { cpus, totalmem } from 'node:os';
import { Redis } from 'ioredis';

export interface MachineInfo {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  redis: string;
}

/** What a benchmark ran on, printed and stored with its figures. */
export async function describeMachine(redisUrl: string | undefined): Promise<MachineInfo> {
  let info = '';
  if (redisUrl !== undefined) {
    const redis = new Redis(redisUrl);
    info = await redis.info('server');
    redis.disconnect();
  }
  return {
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    redis: /redis_version:(\S+)/.exec(info)?.[1] ?? (redisUrl === undefined ? 'none' : 'unknown'),
  };
}
