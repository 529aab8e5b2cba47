import { performance } from 'node:perf_hooks';
import type { HistogramSeries } from './histogram.js';
import type { SpanEnd } from './span-types.js';
import { startStorageSpan } from './tracing.js';

/**
 * Starts timing a storage call into its series of `storageDuration`; with traces on, also a span
 * named by the operation. Call the returned function once when the call settles, with the error
 * if it failed. The caller runs the call itself: nothing here calls back into it.
 */
export function startStorageCall(operation: HistogramSeries): SpanEnd {
  const started = performance.now();
  const endSpan = startStorageSpan(operation.labels.operation!);
  return (error) => {
    endSpan(error);
    operation.observe((performance.now() - started) / 1000);
  };
}
