/**
 * Decodes an OTLP/HTTP protobuf trace export (ExportTraceServiceRequest,
 * opentelemetry/proto/collector/trace/v1) from its wire format, written here from the .proto field
 * numbers rather than taken from the exporter's own serializer: a receiver that shares the sender's
 * code would accept whatever the sender got wrong. Reads what the tests look at (resources, span
 * ids, names, kinds, times, attributes, status); skips the rest by wire type.
 */
export interface DecodedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: Record<string, unknown>;
  statusCode: number;
  resource: Record<string, unknown>;
}

type Field = { no: number; wire: number; varint: bigint; bytes: Buffer };

function* fields(buffer: Buffer): Generator<Field> {
  let at = 0;
  const varint = (): bigint => {
    let result = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (at >= buffer.length) throw new Error('truncated varint');
      const byte = buffer[at++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
    }
  };
  while (at < buffer.length) {
    const key = Number(varint());
    const no = key >>> 3;
    const wire = key & 7;
    const empty = Buffer.alloc(0);
    if (wire === 0) yield { no, wire, varint: varint(), bytes: empty };
    else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      if (at + size > buffer.length) throw new Error('truncated fixed field');
      const bytes = buffer.subarray(at, at + size);
      at += size;
      yield { no, wire, varint: wire === 1 ? bytes.readBigUInt64LE() : BigInt(bytes.readUInt32LE()), bytes };
    } else if (wire === 2) {
      const length = Number(varint());
      if (at + length > buffer.length) throw new Error('truncated length-delimited field');
      const bytes = buffer.subarray(at, at + length);
      at += length;
      yield { no, wire, varint: 0n, bytes };
    } else throw new Error(`wire type ${wire} (field ${no}) is not in OTLP`);
  }
}

function anyValue(buffer: Buffer): unknown {
  for (const f of fields(buffer)) {
    if (f.no === 1) return f.bytes.toString('utf8');
    if (f.no === 2) return f.varint !== 0n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.varint));
    if (f.no === 4) return f.bytes.readDoubleLE();
    if (f.no === 7) return f.bytes.toString('hex');
  }
  return undefined;
}

function keyValues(buffers: Buffer[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const buffer of buffers) {
    let key = '';
    let value: unknown;
    for (const f of fields(buffer)) {
      if (f.no === 1) key = f.bytes.toString('utf8');
      if (f.no === 2) value = anyValue(f.bytes);
    }
    out[key] = value;
  }
  return out;
}

function span(buffer: Buffer, resource: Record<string, unknown>): DecodedSpan {
  const decoded: DecodedSpan = {
    traceId: '',
    spanId: '',
    parentSpanId: '',
    name: '',
    kind: 0,
    startTimeUnixNano: 0n,
    endTimeUnixNano: 0n,
    attributes: {},
    statusCode: 0,
    resource,
  };
  const attributes: Buffer[] = [];
  for (const f of fields(buffer)) {
    if (f.no === 1) decoded.traceId = f.bytes.toString('hex');
    else if (f.no === 2) decoded.spanId = f.bytes.toString('hex');
    else if (f.no === 4) decoded.parentSpanId = f.bytes.toString('hex');
    else if (f.no === 5) decoded.name = f.bytes.toString('utf8');
    else if (f.no === 6) decoded.kind = Number(f.varint);
    else if (f.no === 7) decoded.startTimeUnixNano = f.varint;
    else if (f.no === 8) decoded.endTimeUnixNano = f.varint;
    else if (f.no === 9) attributes.push(f.bytes);
    else if (f.no === 15)
      for (const s of fields(f.bytes)) if (s.no === 3) decoded.statusCode = Number(s.varint);
  }
  decoded.attributes = keyValues(attributes);
  return decoded;
}

/** The spans of one export request, each with its resource's attributes. */
export function decodeTraceExport(body: Buffer): DecodedSpan[] {
  const spans: DecodedSpan[] = [];
  for (const resourceSpans of fields(body)) {
    if (resourceSpans.no !== 1) continue;
    let resource: Record<string, unknown> = {};
    const scopeSpans: Buffer[] = [];
    for (const f of fields(resourceSpans.bytes)) {
      if (f.no === 1)
        resource = keyValues([...fields(f.bytes)].filter((r) => r.no === 1).map((r) => r.bytes));
      if (f.no === 2) scopeSpans.push(f.bytes);
    }
    for (const scope of scopeSpans)
      for (const f of fields(scope)) if (f.no === 2) spans.push(span(f.bytes, resource));
  }
  return spans;
}
