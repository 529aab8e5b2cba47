import type { Registry } from 'prom-client';

/** One label combination of a histogram: what `observe` touches on the hot path. */
export class HistogramSeries {
  count = 0;
  sum = 0;
  /** Observations per bucket (not cumulative); the last slot is +Inf. */
  readonly perBucket: Float64Array;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.perBucket = new Float64Array(bounds.length + 1);
  }

  reset() {
    this.count = 0;
    this.sum = 0;
    this.perBucket.fill(0);
  }

  observe(value: number) {
    this.count++;
    this.sum += value;
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]!) i++;
    this.perBucket[i]!++;
  }
}

interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** The shape prom-client's registry renders: any object with `name`, `help`, `type` and `get()`. */
interface Collector {
  name: string;
  help: string;
  type: 'histogram' | 'counter';
  aggregator: 'sum';
  get(): { name: string; help: string; type: string; aggregator: 'sum'; values: MetricValue[] };
  reset(): void;
}

const fields = ({ name, help, type, aggregator }: Collector) => ({ name, help, type, aggregator });

/**
 * A histogram observed on every request. prom-client's own `observe(labels, value)` validates and
 * hashes the label object on each call, a cost paid on every request (bench/analysis.md, "what each optimisation is worth");
 * here a label combination is looked up once and kept as a series, and prom-client only
 * renders the figures at scrape time, through its collector interface.
 */
export class Histogram {
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
  ) {}

  /** The series for these label values, in `labelNames` order. */
  of(...values: string[]): HistogramSeries {
    const key = values.join('\u0000');
    let series = this.series.get(key);
    if (series === undefined) {
      series = new HistogramSeries(
        Object.fromEntries(this.labelNames.map((name, i) => [name, values[i]!])),
        this.bounds,
      );
      this.series.set(key, series);
    }
    return series;
  }

  /** Registers the histogram with `registry`, and when `countAs` is given, its counts as a counter too. */
  register(registry: Registry, countAs?: { name: string; help: string }) {
    const all = () => [...this.series.values()];
    // Zeroed, not forgotten: callers keep their series (see `of`) for the life of the process.
    const reset = () => {
      for (const series of this.series.values()) series.reset();
    };
    const histogram: Collector = {
      name: this.name,
      help: this.help,
      type: 'histogram',
      aggregator: 'sum',
      get: () => ({ ...fields(histogram), values: all().flatMap((s) => this.render(s)) }),
      reset,
    };
    registry.registerMetric(histogram as never);
    if (countAs === undefined) return;
    const counter: Collector = {
      ...countAs,
      type: 'counter',
      aggregator: 'sum',
      get: () => ({ ...fields(counter), values: all().map((s) => ({ labels: { ...s.labels }, value: s.count })) }),
      reset,
    };
    registry.registerMetric(counter as never);
  }

  private render(series: HistogramSeries): MetricValue[] {
    const values: MetricValue[] = [];
    let cumulative = 0;
    this.bounds.forEach((bound, i) => {
      cumulative += series.perBucket[i]!;
      values.push({ labels: { le: bound, ...series.labels }, value: cumulative, metricName: `${this.name}_bucket` });
    });
    values.push({ labels: { le: '+Inf', ...series.labels }, value: series.count, metricName: `${this.name}_bucket` });
    values.push({ labels: { ...series.labels }, value: series.sum, metricName: `${this.name}_sum` });
    values.push({ labels: { ...series.labels }, value: series.count, metricName: `${this.name}_count` });
    return values;
  }
}

/** One label combination of a `LabelledCounter`. */
export class CounterSeries {
  value = 0;

  constructor(readonly labels: Readonly<Record<string, string>>) {}

  inc() {
    this.value++;
  }
}

/** A counter bumped on every request: as `Histogram`, one series per label combination, rendered at scrape time. */
export class LabelledCounter {
  private readonly series = new Map<string, CounterSeries>();

  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly labelNames: readonly string[],
  ) {}

  /** The series for these label values, in `labelNames` order. */
  of(...values: string[]): CounterSeries {
    const key = values.join('\u0000');
    let series = this.series.get(key);
    if (series === undefined) {
      series = new CounterSeries(Object.fromEntries(this.labelNames.map((name, i) => [name, values[i]!])));
      this.series.set(key, series);
    }
    return series;
  }

  register(registry: Registry) {
    const counter: Collector = {
      name: this.name,
      help: this.help,
      type: 'counter',
      aggregator: 'sum',
      get: () => ({
        ...fields(counter),
        values: [...this.series.values()].map((s) => ({ labels: { ...s.labels }, value: s.value })),
      }),
      // Zeroed, not forgotten, as a histogram's series.
      reset: () => {
        for (const series of this.series.values()) series.value = 0;
      },
    };
    registry.registerMetric(counter as never);
  }
}
