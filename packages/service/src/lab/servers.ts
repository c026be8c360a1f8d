import { EtcdServer, MariaDbServer, ZooKeeperServer } from '@lockstock/servers';

/**
 * Servers beside the lab's Redis and PostgreSQL that some strategies need (a lock backend of their
 * own). The runner starts only those a selected strategy names, once per lab, before the workers:
 * a lab without these strategies starts no JVM and no mariadbd.
 */
export type LabServerKind = 'zookeeper' | 'etcd' | 'mysql';

/**
 * Where each extra server answers, as its lock client takes it: ZooKeeper's connect string
 * (`127.0.0.1:2181`), etcd's client URL (`http://127.0.0.1:2379`), MySQL's URL with a database
 * (`mysql://root@127.0.0.1:3306/lockstock`; MariaDB serves it).
 */
export type LabServers = Partial<Record<LabServerKind, string>>;

interface Started {
  address: string;
  stop(): Promise<void>;
}

const launchers: Record<LabServerKind, () => Promise<Started>> = {
  async zookeeper() {
    const server = await ZooKeeperServer.start();
    return { address: server.connectString, stop: () => server.stop() };
  },
  async etcd() {
    const server = await EtcdServer.start();
    return { address: server.endpoint, stop: () => server.stop() };
  },
  async mysql() {
    const server = await MariaDbServer.start();
    return { address: server.url, stop: () => server.stop() };
  },
};

/**
 * Starts (at once) each server of `kinds` that `given` has no address for; resolves with every
 * address and a stop() for what it started. If one fails to start, those that did are stopped.
 */
export async function startLabServers(
  kinds: Iterable<LabServerKind>,
  given: LabServers = {},
): Promise<{ servers: LabServers; stop(): Promise<void> }> {
  const missing = [...new Set(kinds)].filter((kind) => given[kind] === undefined);
  const outcomes = await Promise.allSettled(missing.map((kind) => launchers[kind]()));
  const started = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
  const stop = async () => {
    await Promise.all(started.map((s) => s.stop()));
  };
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  const servers: LabServers = { ...given };
  missing.forEach(
    (kind, i) => (servers[kind] = (outcomes[i] as PromiseFulfilledResult<Started>).value.address),
  );
  return { servers, stop };
}
