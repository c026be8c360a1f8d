import { useZooKeeperBackend } from './backends.js';
import { lockContract } from './contract.js';
import { SUBJECTS } from './subjects.mjs';

// The lock contract on one ZooKeeper server, for every kind the ZooKeeper backend offers: all but the
// spin lock and the counter semaphore, which it refuses with their reasons (see ZooKeeperBackend's
// capabilities). Holds end with their session, whose timeout the SIGKILL check sets to the lease it
// allows; breakHolds force-unlocks, and holders learn it from the watch each keeps on its own node.
const REFUSED = new Set(['spin', 'counter-semaphore']);
lockContract(
  useZooKeeperBackend(),
  Object.keys(SUBJECTS).filter((subject) => !REFUSED.has(subject)),
);
