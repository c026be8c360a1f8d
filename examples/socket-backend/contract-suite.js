// lockstock's backend contract suite (lockstock/testing) on the example backend, under node:test.
// Each test file of test/ registers some of the lock kinds (node --test runs the files side by side);
// each starts the example's own lock server, the only server the suite needs.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { contractCases, runContractWithNodeTest } from 'lockstock/testing';
import { SocketLockClient } from './backend.js';

let server;
let port;

// The server of this test file (node --test runs each file in its own process).
before(async () => {
  server = spawn(process.execPath, [new URL('./server.js', import.meta.url).pathname], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [line] = await once(createInterface({ input: server.stdout }), 'line');
  ({ port } = JSON.parse(line));
});

after(async () => {
  server.kill();
  await once(server, 'exit');
});

/** @type {import('lockstock/testing').ContractBackend} */
const backend = {
  // The suite closes every client it asks for. Holds end with the client's connection, so there is
  // no session timeout to set; the watchdog option is the core's (unused without leases).
  client: ({ watchdogTimeoutMs } = {}) => new SocketLockClient({ port, watchdogTimeoutMs }),
  // An operator's force-unlock: the server drops every hold of the lock and tells the holders.
  breakHolds: async (client, lock) => {
    await /** @type {SocketLockClient} */ (client).forceUnlock(lock);
  },
  // Fixture processes (contenders, a holder the suite kills) connect with connect.js.
  processes: {
    module: new URL('./connect.js', import.meta.url),
    config: () => ({ port }),
  },
};

/** Registers the contract's cases for `subjects` (kinds of CONTRACT_SUBJECTS). */
export function runContract(subjects) {
  runContractWithNodeTest(contractCases(backend, { subjects }), test);
}
