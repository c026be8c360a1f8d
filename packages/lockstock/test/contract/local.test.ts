import { describe, expect, it } from 'vitest';
import { checkLockHistory } from '../../src/checker/index.js';
import { LocalLockClient } from '../../src/local/index.js';
import { runProbe } from '../../src/testing/probe.js';
import { useLocalBackend } from './backends.js';
import { lockContract } from './contract.js';

// The lock contract on the local (in-process) backend, for every kind: its contenders are clients of
// this process (its holds cross no process boundary; test/local checks the rest in-process).
lockContract(useLocalBackend());

describe('the in-process probe (control)', () => {
  it('sees overlap and lost updates when the clients share no locks (each its own namespace)', async () => {
    let namespaces = 0;
    const clients: LocalLockClient[] = [];
    const apart = () => {
      const client = new LocalLockClient({ namespace: `apart-${process.pid}-${++namespaces}` });
      clients.push(client);
      return client;
    };
    try {
      const { report, counter, exclusive, events } = await runProbe(
        { processes: 4, client: apart },
        { subject: 'mutex', name: 'control', loops: 2, sections: 15 },
      );
      expect(report.overlaps).toBeGreaterThan(0);
      expect(report.maxInside).toBeGreaterThan(1);
      expect(counter).toBeLessThan(exclusive);
      expect(checkLockHistory(events).checks.exclusion.valid).toBe(false);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });
});
