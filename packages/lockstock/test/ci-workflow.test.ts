import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The release workflow must be able to pass on a tag: it runs the same checks as CI (.ci/run), which
 * need every server the tests start. .ci/run installs them with apt-get when it runs as root; the
 * workflow once installed four of them itself, as a non-root user, and its list drifted. Whatever the
 * workflow installs on its own must be .ci/run's list, and .ci/run must run as root there.
 */
const root = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));
const ciRun = readFileSync(root('.ci/run'), 'utf8');
const workflow = readFileSync(root('.github/workflows/release.yml'), 'utf8');

/** The Debian packages .ci/run installs when missing (`missing+=(name)`). */
const ciPackages = [...ciRun.matchAll(/missing\+=\(([a-z0-9.+-]+)\)/g)].map((m) => m[1]!).sort();

/** The packages the workflow's own `apt-get install` lines name (options left out). */
const workflowPackages = [...workflow.matchAll(/apt-get install([^\n&|;]*)/g)]
  .flatMap((m) => m[1]!.trim().split(/\s+/))
  .filter((word) => word !== '' && !word.startsWith('-'))
  .sort();

/** The workflow's job lines outside comments. */
const steps = workflow
  .split('\n')
  .filter((line) => !line.trimStart().startsWith('#'))
  .join('\n');

describe('the release workflow installs what CI installs', () => {
  it('.ci/run names the nine packages of the servers, browser and tools the tests start', () => {
    expect(ciPackages).toEqual([
      'chromium',
      'etcd-server',
      'mariadb-server',
      'pgbouncer',
      'postgresql',
      'prometheus',
      'redis-tools',
      'wrk',
      'zookeeper',
    ]);
  });

  it('runs .ci/run as root, on Debian, and installs no other list of its own', () => {
    expect(steps).toMatch(/^\s+run: (sudo )?\.ci\/run\s*$/m);
    // .ci/run installs only as root: either the job runs as root (a Debian container, no other
    // user), or it calls .ci/run through sudo.
    const asRoot = /^\s+container:\s*\n\s+image: (node:20-bookworm|debian:12|debian:bookworm)\b/m.test(steps);
    const throughSudo = /^\s+run: sudo \.ci\/run\s*$/m.test(steps);
    expect(asRoot || throughSudo).toBe(true);
    expect(steps).not.toMatch(/--user|^\s+user:/m);
    // A list of its own, if it ever has one again, is .ci/run's.
    if (workflowPackages.length > 0) expect(workflowPackages).toEqual(ciPackages);
  });
});
