/**
 * `lockstock/zookeeper` — lockstock's locks on Apache ZooKeeper, with Apache Curator's recipes:
 * ephemeral sequential nodes created with protection, each waiter watching only the node before it,
 * holds that last as long as the session (lost at once with it, or with the connection, as the
 * policy says), fencing tokens from the nodes' czxids. Needs the optional peer dependency
 * `node-zookeeper-client`.
 *
 * @module lockstock/zookeeper
 */
export { ZooKeeperBackend, ZooKeeperLockClient, type ZooKeeperLockClientOptions } from './client.js';
export { ZooKeeperSessionError, type ConnectionLossPolicy } from './session.js';
