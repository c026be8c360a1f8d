import jute from 'node-zookeeper-client/lib/jute/index.js';

/**
 * ZooKeeper's result type for a create that answers with the node's stat (create2, createContainer,
 * createTTL) inside a multi.
 */
const CREATE2 = 15;

/** CreateMode.CONTAINER (ZooKeeper 3.5+): a persistent node the server deletes once its last child is. */
export const CONTAINER = 4;

let taught = false;

/**
 * Teaches node-zookeeper-client (1.1.3, the last release) to read a multi's create2 result, so that
 * container nodes can be made. The driver knows neither the createContainer request (op 19) nor the
 * create2 result; a create with the container flag sent as a plain create makes a persistent node, but
 * sent inside a multi the server makes a container and answers with a create2 result, on which the
 * driver's multi reader throws from its socket handler. This replaces that reader with the same one
 * plus the create2 case (path, then the stat); every other answer is read exactly as before. Done
 * once per process, for the driver copy lockstock loads.
 */
export function teachCreate2Results(): void {
  if (taught) return;
  taught = true;
  const { OP_CODES, protocol, data } = jute;
  jute.TransactionResponse.prototype.deserialize = function (buffer, offset) {
    let read = 0;
    for (;;) {
      const header = new protocol.MultiHeader();
      read += header.deserialize(buffer, offset + read);
      if (header.done) return read;
      const type = header.type;
      if (type === OP_CODES.CREATE || type === CREATE2) {
        const response = new protocol.CreateResponse();
        response.setChrootPath(this.chrootPath);
        read += response.deserialize(buffer, offset + read);
        if (type === CREATE2) read += new data.Stat().deserialize(buffer, offset + read);
        this.results.push({ type: OP_CODES.CREATE, path: response.path });
      } else if (type === OP_CODES.DELETE || type === OP_CODES.CHECK) {
        this.results.push({ type });
      } else if (type === OP_CODES.SET_DATA) {
        const response = new protocol.SetDataResponse();
        response.setChrootPath(this.chrootPath);
        read += response.deserialize(buffer, offset + read);
        this.results.push({ type, stat: response.stat });
      } else if (type === OP_CODES.ERROR) {
        const response = new protocol.ErrorResponse();
        response.setChrootPath(this.chrootPath);
        read += response.deserialize(buffer, offset + read);
        this.results.push({ type, err: response.err });
      } else {
        throw new Error(`Unknown type: ${type} in transaction response.`);
      }
    }
  };
}
