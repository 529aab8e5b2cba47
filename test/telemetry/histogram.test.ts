import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { Histogram, LabelledCounter } from '../../src/telemetry/histogram.js';

async function scrape(observe: (histogram: Histogram) => void, reset = false): Promise<string> {
  const registry = new Registry();
  const histogram = new Histogram('demo_seconds', 'A demo', ['route'], [0.1, 1]);
  histogram.register(registry, { name: 'demo_total', help: 'Demo count' });
  observe(histogram);
  if (reset) {
    registry.resetMetrics();
    histogram.of('/a').observe(0.5);
  }
  return registry.metrics();
}

describe('request histograms and counters render as Prometheus histograms and counters', () => {
  it('renders cumulative buckets, +Inf, sum and count, and the count as a counter', async () => {
    const text = await scrape((h) => {
      h.of('/a').observe(0.05);
      h.of('/a').observe(0.5);
      h.of('/a').observe(5);
    });
    for (const line of [
      'demo_seconds_bucket{le="0.1",route="/a"} 1',
      'demo_seconds_bucket{le="1",route="/a"} 2',
      'demo_seconds_bucket{le="+Inf",route="/a"} 3',
      'demo_seconds_sum{route="/a"} 5.55',
      'demo_seconds_count{route="/a"} 3',
      '# TYPE demo_total counter',
      'demo_total{route="/a"} 3',
    ])
      assert.ok(text.split('\n').includes(line), `${line} in\n${text}`);
  });

  it('keeps counting into the same series after a reset', async () => {
    const series: { observe(v: number): void }[] = [];
    const text = await scrape((h) => {
      series.push(h.of('/a'));
      series[0]!.observe(5);
    }, true);
    assert.ok(text.split('\n').includes('demo_seconds_count{route="/a"} 1'), text);
    assert.ok(text.split('\n').includes('demo_seconds_bucket{le="1",route="/a"} 1'), text);
  });

  it('renders a labelled counter per series, zeroed by a reset and counting on', async () => {
    const registry = new Registry();
    const counter = new LabelledCounter('demo_lookups_total', 'Demo lookups', ['result']);
    counter.register(registry);
    const hit = counter.of('hit');
    counter.of('miss');
    hit.inc();
    hit.inc();
    const before = (await registry.metrics()).split('\n');
    for (const line of [
      '# TYPE demo_lookups_total counter',
      'demo_lookups_total{result="hit"} 2',
      'demo_lookups_total{result="miss"} 0',
    ])
      assert.ok(before.includes(line), `${line} in\n${before.join('\n')}`);
    registry.resetMetrics();
    hit.inc();
    assert.ok((await registry.metrics()).split('\n').includes('demo_lookups_total{result="hit"} 1'));
  });
});
