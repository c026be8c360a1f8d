import { findMariaDb, findPostgresBinDir, findRedisServer } from '@lockstock/servers';

/** Installs missing server packages once, before parallel test files race to do it. */
export default function setup(): void {
  findRedisServer();
  findPostgresBinDir();
  findMariaDb();
}
