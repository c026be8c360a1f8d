import { findEtcd, findMariaDb, findZooKeeper } from '../src/index.js';

/** Installs missing server packages once, before parallel test files race to do it. */
export default function setup(): void {
  findZooKeeper();
  findEtcd();
  findMariaDb();
}
