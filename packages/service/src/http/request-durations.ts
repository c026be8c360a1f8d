import {
  Histogram,
  type MetricObjectWithValues,
  type MetricType,
  type MetricValueWithName,
  type Registry,
} from 'prom-client';

type Label = 'method' | 'route' | 'status';
type Value = MetricValueWithName<Label | 'le'>;

const NAME = 'lockstock_http_request_seconds';
const HELP = 'HTTP request duration by route and status';
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/**
 * What prom-client's registry reads besides the values. Its typings declare `type` as a numeric enum;
 * at run time (and in the text format) it is the string, as every prom-client metric has it.
 */
const DESCRIPTION = {
  name: NAME,
  help: HELP,
  type: 'histogram' as unknown as MetricType,
  aggregator: 'sum' as const,
  collect: () => undefined,
};

interface Series {
  readonly labels: Record<Label, string>;
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  readonly counts: number[];
  sum: number;
  count: number;
}

/**
 * `lockstock_http_request_seconds` (method, route, status), observed without prom-client's
 * per-observation work: it validates and hashes the label object every time, which was ~12% of the
 * CPU of a sold-out answer. Here a series is found by one string key and a bucket by a short loop;
 * the export is prom-client's histogram format (this is a Histogram to the registry).
 */
export class RequestDurations extends Histogram<Label> {
  private readonly series = new Map<string, Series>();

  constructor(registry: Registry) {
    super({
      name: NAME,
      help: HELP,
      labelNames: ['method', 'route', 'status'],
      buckets: BUCKETS,
      registers: [registry],
    });
  }

  /** The instance registered in `registry`, or a new one (several apps may share a registry). */
  static in(registry: Registry): RequestDurations {
    const found = registry.getSingleMetric(NAME);
    if (found instanceof RequestDurations) return found;
    if (found) throw new TypeError(`${NAME} is registered already, as another kind of metric`);
    return new RequestDurations(registry);
  }

  record(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route} ${status}`;
    let series = this.series.get(key);
    if (!series) {
      series = {
        labels: { method, route, status: String(status) },
        counts: new Array<number>(BUCKETS.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      this.series.set(key, series);
    }
    let bucket = 0;
    while (bucket < BUCKETS.length && seconds > (BUCKETS[bucket] as number)) bucket++;
    series.counts[bucket] = (series.counts[bucket] as number) + 1;
    series.sum += seconds;
    series.count++;
  }

  override async get(): Promise<MetricObjectWithValues<Value>> {
    const values: Value[] = [];
    for (const { labels, counts, sum, count } of this.series.values()) {
      let cumulative = 0;
      BUCKETS.forEach((le, i) => {
        cumulative += counts[i] as number;
        values.push({ metricName: `${NAME}_bucket`, labels: { ...labels, le }, value: cumulative });
      });
      values.push(
        { metricName: `${NAME}_bucket`, labels: { ...labels, le: '+Inf' }, value: count },
        { metricName: `${NAME}_sum`, labels, value: sum },
        { metricName: `${NAME}_count`, labels, value: count },
      );
    }
    return { ...DESCRIPTION, values };
  }

  /** The registry prefers this to get() when present (prom-client's Histogram has one). */
  async getForPromString(): Promise<MetricObjectWithValues<Value>> {
    return this.get();
  }

  override reset(): void {
    super.reset();
    // The base constructor calls reset() too, before this class's fields exist.
    (this.series as Map<string, Series> | undefined)?.clear();
  }
}
