import {
  findEtcd,
  findMariaDb,
  findPostgresBinDir,
  findRedisServer,
  findZooKeeper,
} from '@lockstock/servers';

/** Installs missing server packages once, before parallel test files race to do it. */
export default function setup(): void {
  findRedisServer();
  findPostgresBinDir();
  // The lab's lock-based strategies and database remedies run on these too (test/lab/).
  findZooKeeper();
  findEtcd();
  findMariaDb();
}
