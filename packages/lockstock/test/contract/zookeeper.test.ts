import { useZooKeeperBackend } from './backends.js';
import { lockContract } from './contract.js';
import { CONTRACT_KINDS } from '../../src/testing/index.js';
import { longTier, QUICK_CONTRACT_KINDS } from '../helpers/tier.js';

// The lock contract on one ZooKeeper server, for every kind the ZooKeeper backend offers: all but the
// spin lock and the counter semaphore, which it refuses with their reasons (see ZooKeeperBackend's
// capabilities). Holds end with their session, whose timeout the SIGKILL check sets to the lease it
// allows; breakHolds force-unlocks, and holders learn it from the watch each keeps on its own node.
const REFUSED = new Set(['spin', 'counter-semaphore']);
// npm test: the quick row (a mutex, a fair lock, a semaphore, where offered); every kind in the
// long tier (npm run test:long). Redis on one server runs every kind in both.
lockContract(
  useZooKeeperBackend(),
  CONTRACT_KINDS.filter((subject) => !REFUSED.has(subject)).filter(
    (subject) => longTier || QUICK_CONTRACT_KINDS.includes(subject),
  ),
);
