import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a traced server sent the sink. */
export interface OtlpReceipt {
  /** Export requests to /v1/traces. */
  requests: number;
  /** Spans in them (counted, not decoded). */
  spans: number;
}

/**
 * A collector that keeps nothing, for the sale benchmark's traced server: it takes OTLP/HTTP JSON
 * exports on /v1/traces (the service's exporter), answers 200 and counts the requests and their spans,
 * so a traced run pays the whole export path — serializing, the HTTP POST, the batch processor — and
 * the report can show that spans did go out. It runs in the benchmark's process, on the same machine,
 * as a local collector or agent would.
 */
export async function startOtlpSink(): Promise<{
  url: string;
  receipt(): OtlpReceipt;
  stop(): Promise<void>;
}> {
  const received: OtlpReceipt = { requests: 0, spans: 0 };
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        received.requests++;
        // Each span has one "spanId" key ("parentSpanId" is another key): count them without decoding.
        for (let at = body.indexOf('"spanId"'); at !== -1; at = body.indexOf('"spanId"', at + 8))
          received.spans++;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    receipt: () => ({ ...received }),
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
