import * as zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { CONTAINER, teachCreate2Results } from './containers.js';
import { closeClient } from './driver.js';
import { codeOf, NO_NODE, NODE_EXISTS, ZooKeeperSessionError, type Done } from './errors.js';

/** One driver call through the session (its timeouts and connection error). */
export type SessionCall = (run: (zk: Client, done: Done<void>) => void) => Promise<void>;

/**
 * The paths locks live under, made on first need: a queue's parent as a container node (the server
 * deletes it once its last child is gone), and the connect string's chroot, which a client inside
 * it cannot create.
 */
export class PathMaker {
  /** The connect string's chroot (`host:port/app`), made on first need (see mkdirs). */
  private readonly chroot: { hosts: string; path: string } | undefined;
  private chrootMade: Promise<void> | undefined;

  constructor(
    private readonly call: SessionCall,
    connectString: string | undefined,
    /** The session timeout in force: the chroot's own client waits that long. */
    private readonly timeoutMs: () => number,
  ) {
    this.chroot = connectString === undefined ? undefined : chrootOf(connectString);
  }

  /**
   * Makes `path` and its missing parents; `container`: `path` itself a container node, which the
   * server deletes once it had children and has none left (a queue's parent: no empty node stays
   * behind per lock name). A chroot in the connect string is made first if it is missing: through it
   * nothing can be created above, so every create would fail with NO_NODE.
   */
  async mkdirs(path: string, { container = false } = {}): Promise<void> {
    const parent = path.slice(0, path.lastIndexOf('/'));
    try {
      await this.mkdirsNow(path, parent, container);
    } catch (error) {
      if (codeOf(error) !== NO_NODE || this.chroot === undefined) throw error;
      await this.ensureChroot();
      await this.mkdirsNow(path, parent, container);
    }
  }

  private async mkdirsNow(path: string, parent: string, container: boolean): Promise<void> {
    if (!container) return this.call((zk, done) => zk.mkdirp(path, (error) => done(error)));
    for (let attempt = 1; ; attempt++) {
      if (parent !== '') await this.call((zk, done) => zk.mkdirp(parent, (error) => done(error)));
      try {
        return await this.createContainer(path);
      } catch (error) {
        if (codeOf(error) === NODE_EXISTS) return;
        // The parent went meanwhile (a container of someone else's layout reaped): make it again.
        if (codeOf(error) !== NO_NODE || attempt >= 3) throw error;
      }
    }
  }

  /** Creates a container node (inside a multi: the driver knows no createContainer request). */
  private createContainer(path: string): Promise<void> {
    teachCreate2Results();
    return this.call((zk, done) =>
      zk
        .transaction()
        .create(path, Buffer.alloc(0), CONTAINER)
        .commit((error) => done(error)),
    );
  }

  /**
   * Makes the connect string's chroot, once per lock client (Curator's namespace does the same):
   * through a client of its own without the chroot, since a client inside it cannot reach above it.
   */
  private ensureChroot(): Promise<void> {
    const chroot = this.chroot;
    if (chroot === undefined) return Promise.resolve();
    this.chrootMade ??= makeChroot(chroot.hosts, chroot.path, this.timeoutMs());
    this.chrootMade.catch(() => (this.chrootMade = undefined)); // failed: the next create tries again
    return this.chrootMade;
  }
}

/** The chroot of a connect string (`a:1,b:2/app/x` → hosts `a:1,b:2`, path `/app/x`), if it has one. */
export function chrootOf(connectString: string): { hosts: string; path: string } | undefined {
  const slash = connectString.indexOf('/');
  if (slash < 0) return undefined;
  const path = connectString.slice(slash).replace(/\/+$/, '');
  return path === '' ? undefined : { hosts: connectString.slice(0, slash), path };
}

/** Creates `path` (and its parents) through a short-lived client of `hosts`, without a chroot. */
async function makeChroot(hosts: string, path: string, timeoutMs: number): Promise<void> {
  const zk = zookeeper.createClient(hosts, { sessionTimeout: timeoutMs, spinDelay: 100, retries: 0 });
  let connected = false;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new ZooKeeperSessionError('suspended', `ZooKeeper did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      zk.once('connected', () => {
        connected = true;
        zk.mkdirp(path, (error) => {
          clearTimeout(timer);
          if (error) reject(error as Error);
          else resolve();
        });
      });
      zk.connect();
    });
  } finally {
    await closeClient(zk, connected);
  }
}
