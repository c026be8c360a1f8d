// What lockstock/testing's fixture processes import to make a client of this backend in another OS
// process: `connect(config)`, config being the JSON the contract test's `processes.config` returned.
import { SocketLockClient } from './backend.js';

/** @param {{ port: number }} config */
export function connect(config) {
  return new SocketLockClient(config);
}
