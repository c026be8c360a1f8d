import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { categorise, cpuByCategory, type CpuProfile } from '../../src/bench/sale/cpu-profile.js';
import type { PurchaseProfile } from '../../src/bench/sale/profile.js';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'lockstock-bench-profile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const frame = (functionName: string, url = '') => ({ functionName, url });

describe('reading CPU profiles', () => {
  it('puts each sampled function in its category, idle in none', () => {
    expect(categorise(frame('(idle)'))).toBeUndefined();
    expect(categorise(frame('(garbage collector)'))).toBe('garbage collection');
    expect(categorise(frame('writev'))).toBe('socket writes (writev)');
    expect(categorise(frame('verify', 'file:///x/node_modules/fast-jwt/src/verifier.js'))).toBe(
      'token verification (fast-jwt, HMAC)',
    );
    expect(categorise(frame('route', 'file:///x/node_modules/find-my-way/index.js'))).toBe(
      'Fastify (routing, validation, serialization)',
    );
    expect(categorise(frame('parse', 'file:///x/node_modules/redis-parser/lib/parser.js'))).toBe(
      'Redis client (ioredis)',
    );
    expect(categorise(frame('emit', 'node:events'))).toBe('Node: http, net, streams, timers');
    expect(categorise(frame('reserve', 'file:///x/packages/service/dist/sale/reserve.js'))).toBe(
      'the endpoint’s own code',
    );
  });

  it('sums only the samples inside the window, each standing for the time up to the next', () => {
    // Samples at t = 100, 110, 130, 160 (µs): GC, our code, idle, our code.
    const profile: CpuProfile = {
      nodes: [
        { id: 1, callFrame: frame('(garbage collector)') },
        { id: 2, callFrame: frame('buy', 'file:///x/dist/service.js') },
        { id: 3, callFrame: frame('(idle)') },
      ],
      startTime: 90,
      endTime: 200,
      samples: [1, 2, 3, 2],
      timeDeltas: [10, 10, 20, 30],
    };
    expect(Object.fromEntries(cpuByCategory(profile, 0, 1000))).toEqual({
      'garbage collection': 10,
      'the endpoint’s own code': 20, // the last sample has no next one: it counts nothing
    });
    expect(Object.fromEntries(cpuByCategory(profile, 105, 150))).toEqual({ 'the endpoint’s own code': 20 });
  });
});

describe('bench sale --profile', () => {
  it('profiles both servers under wrk and reports µs per request by category', async () => {
    const json = join(dir, 'profile.json');
    const { code, stdout, stderr } = await runCli([
      'bench',
      'sale',
      '--profile',
      '--runs',
      '1',
      '--duration',
      '1',
      '--json',
      json,
    ]);
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/where a purchase’s CPU goes/);
    const { profile } = JSON.parse(readFileSync(json, 'utf8')) as { profile: PurchaseProfile };
    for (const server of [profile.minimal, profile.lockstock]) {
      expect(server.requestsPerSec).toBeGreaterThan(0);
      expect(server.busyUsPerRequest).toBeGreaterThan(0);
      // Both verify a token per request and talk to Redis: the categories are where they should be.
      expect(server.usPerRequest['token verification (fast-jwt, HMAC)']).toBeGreaterThan(0);
      expect(server.usPerRequest['Redis client (ioredis)']).toBeGreaterThan(0);
    }
  });
});
