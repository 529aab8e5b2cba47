import { performance } from 'node:perf_hooks';
import type { HistogramSeries } from './histogram.js';
import { storageSpan } from './tracing.js';

/** Times a storage call into its series of `storageDuration`; with traces on, also a span named by the operation. */
export async function timed<T>(operation: HistogramSeries, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await storageSpan(operation.labels.operation!, work);
  } finally {
    operation.observe((performance.now() - started) / 1000);
  }
}
