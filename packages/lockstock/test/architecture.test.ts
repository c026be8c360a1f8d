import { describe, expect, it } from 'vitest';
import { importsOf, layerViolations, sourceFiles } from './helpers/layers.js';

const src = new URL('../src', import.meta.url);

describe('architecture of the lock library', () => {
  it('lower layers never import upper ones', () => {
    const violations = layerViolations(src, [
      'support',
      'checker',
      'locks',
      'backend',
      'redis',
      'local',
      'etcd',
      'zookeeper',
      'postgres',
      'mysql',
      'otel',
    ]);
    expect(violations).toEqual([]);
  });

  it("imports only Node built-ins and each backend's own driver, in that backend's directory (lean)", () => {
    // A team using one backend installs only its driver: no module outside a backend's directory
    // (and the Redis plumbing) may load another backend's driver.
    const DRIVERS: Record<string, string> = {
      ioredis: '/redis/',
      etcd3: '/etcd/',
      'node-zookeeper-client': '/zookeeper/',
      // The driver's wire records, which zookeeper/containers.ts teaches the create2 result.
      'node-zookeeper-client/lib/jute/index.js': '/zookeeper/',
      // fencing/postgres-fenced-store.ts and redis/redlock/token-source.ts take a Queryable by shape instead.
      pg: '/postgres/',
      'mysql2/promise': '/mysql/',
      // lockstock/otel: the OpenTelemetry API (an optional peer), for those who import that subpath.
      '@opentelemetry/api': '/otel/',
    };
    const foreign = sourceFiles(src).flatMap((file) =>
      importsOf(file)
        .filter((target) => !target.startsWith('.') && !target.startsWith('node:'))
        .filter((target) => !(DRIVERS[target] !== undefined && file.includes(DRIVERS[target])))
        .map((target) => `${file} imports ${target}`),
    );
    expect(foreign).toEqual([]);
  });
});
