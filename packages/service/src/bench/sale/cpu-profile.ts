/**
 * Reading a V8 `.cpuprofile` (what `node --cpu-prof` writes) for `bench sale --profile`: the CPU a
 * server spent inside a time window, summed by where the running function lives (token verification,
 * Fastify, the Redis client, Node's own http/net/streams, socket writes, GC, our code, …).
 *
 * The window is given in CLOCK_MONOTONIC microseconds: V8's profiler stamps its samples with that
 * clock, and so does `process.hrtime` in the benchmark's process, so the two line up across processes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Where a purchase's CPU goes, in the order the report prints them. */
export const CATEGORIES = [
  'socket writes (writev)',
  'token verification (fast-jwt, HMAC)',
  'Node: http, net, streams, timers',
  'Fastify (routing, validation, serialization)',
  'Redis client (ioredis)',
  'metrics (prom-client)',
  'the endpoint’s own code',
  'other native code',
  'other libraries',
  'V8 (compiled code, runtime)',
  'garbage collection',
] as const;
export type Category = (typeof CATEGORIES)[number];

const FASTIFY =
  /\/node_modules\/(fastify|@fastify\/[^/]+|find-my-way|avvio|fast-json-stringify|fast-querystring|fast-content-type-parse|secure-json-parse|ajv|light-my-request|toad-cache|rfdc|process-warning|abstract-logging|fast-uri|json-schema-ref-resolver)\//;
const REDIS =
  /\/node_modules\/(ioredis|redis-parser|denque|cluster-key-slot|standard-as-callback|redis-errors)\//;
const SOCKET_WRITES = /^(writev|writeUtf8String|writeLatin1String|writeBuffer|writeAsciiString)$/;

/** The category of one sampled function; undefined for idle time. */
export function categorise(frame: CallFrame): Category | undefined {
  const { functionName: name, url } = frame;
  if (name === '(idle)') return undefined;
  if (name === '(garbage collector)') return 'garbage collection';
  if (name === '(program)') return 'V8 (compiled code, runtime)';
  if (url.includes('/node_modules/fast-jwt/')) return 'token verification (fast-jwt, HMAC)';
  if (REDIS.test(url)) return 'Redis client (ioredis)';
  if (FASTIFY.test(url)) return 'Fastify (routing, validation, serialization)';
  if (url.includes('/node_modules/prom-client/')) return 'metrics (prom-client)';
  if (url.startsWith('node:')) return 'Node: http, net, streams, timers';
  if (url === '') {
    if (SOCKET_WRITES.test(name)) return 'socket writes (writev)';
    if (/Hmac|hmac|digest|update|timingSafeEqual/.test(name)) return 'token verification (fast-jwt, HMAC)';
    return 'other native code';
  }
  if (url.includes('/node_modules/')) return 'other libraries';
  return 'the endpoint’s own code';
}

/** CPU µs per category spent while the sample's time lay in [fromUs, toUs]. */
export function cpuByCategory(profile: CpuProfile, fromUs: number, toUs: number): Map<Category, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const totals = new Map<Category, number>();
  let time = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    time += profile.timeDeltas[i] ?? 0;
    // A sample stands for the interval up to the next one.
    const span = profile.timeDeltas[i + 1] ?? 0;
    if (time < fromUs || time > toUs) continue;
    const frame = byId.get(profile.samples[i] as number);
    const category = frame && categorise(frame);
    if (category) totals.set(category, (totals.get(category) ?? 0) + span);
  }
  return totals;
}

/** The main thread's profile in `dir` (`--cpu-prof-dir`; worker threads write files of their own). */
export function readMainThreadProfile(dir: string): CpuProfile {
  const files = readdirSync(dir).filter((file) => file.endsWith('.cpuprofile'));
  // CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile: thread 0 is the main thread.
  const main = files.find((file) => file.split('.')[4] === '0') ?? files[0];
  if (!main) throw new Error(`no CPU profile was written in ${dir}`);
  return JSON.parse(readFileSync(join(dir, main), 'utf8')) as CpuProfile;
}

/** Now, in the profiler's clock (CLOCK_MONOTONIC µs). */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}
