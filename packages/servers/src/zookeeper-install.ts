import { existsSync } from 'node:fs';
import { MissingBinaryError } from './errors.js';
import { installDebianPackages, whichExecutable } from './packages.js';

const DEBIAN_JAR = '/usr/share/java/zookeeper.jar';
/** Without an SLF4J binding ZooKeeper logs nothing at all; Debian's libslf4j-java has this one. */
const DEBIAN_SLF4J_SIMPLE = '/usr/share/java/slf4j-simple.jar';
const INSTALL = 'sudo apt-get update && sudo apt-get install -y --no-install-recommends zookeeper';

/** What it takes to run a ZooKeeper server: a `java` and a classpath holding ZooKeeper. */
export interface ZooKeeperInstallation {
  java: string;
  classpath: string;
}

/**
 * Finds Java and ZooKeeper: `LOCKSTOCK_JAVA` or `java` on PATH, and `LOCKSTOCK_ZOOKEEPER_CLASSPATH`
 * or Debian's /usr/share/java/zookeeper.jar (its manifest carries the whole Class-Path) with
 * slf4j-simple.jar for logs. As root it installs Debian's `zookeeper` (which brings a JRE) when either
 * is missing; otherwise it throws MissingBinaryError with the command to run.
 */
export function findZooKeeper(): ZooKeeperInstallation {
  const found = () => {
    const java = process.env.LOCKSTOCK_JAVA || whichExecutable('java');
    const classpath =
      process.env.LOCKSTOCK_ZOOKEEPER_CLASSPATH ||
      (existsSync(DEBIAN_JAR)
        ? [DEBIAN_JAR, ...(existsSync(DEBIAN_SLF4J_SIMPLE) ? [DEBIAN_SLF4J_SIMPLE] : [])].join(':')
        : undefined);
    return java && classpath ? { java, classpath } : undefined;
  };
  const before = found();
  if (before) return before;
  installDebianPackages('zookeeper', ['zookeeper']);
  const after = found();
  if (!after) throw new MissingBinaryError('zookeeper', INSTALL, 'no java or no zookeeper.jar');
  return after;
}
