import type { Config } from '../config.js';
import { tracesWanted } from '../config/tracing-env.js';
import type { SpanAttributes, SpanEnd, SpanHandle, Tracing } from './span-types.js';

/**
 * OpenTelemetry traces, on when OTEL_EXPORTER_OTLP_ENDPOINT (or its _TRACES_ variant) is set.
 * This file is all the rest of the service sees, and it imports no OpenTelemetry package: with
 * the variable unset none is loaded, no request hook is added, and the helpers below cost one
 * test of `active`. The SDK, the exporter and the request hooks are in tracing-sdk.ts, imported
 * only when traces are on.
 */

let active: Tracing | undefined;

/** Starts the SDK in this process when traces are wanted; undefined (and nothing loaded) otherwise. */
export async function startTracing(config: Config): Promise<Tracing | undefined> {
  if (!tracesWanted()) return undefined;
  const { startSdk } = await import('./tracing-sdk.js');
  active = await startSdk({ dbSystem: config.database.startsWith('sqlite:') ? 'sqlite' : 'postgresql' });
  return active;
}

const NO_SPAN: SpanHandle = { setAttributes() {} };

/**
 * Runs `fn` inside a span named `name` (a child of the current one, if any), ended when `fn`
 * settles and marked as an error when it throws. Without tracing, runs `fn` alone.
 */
export function withSpan<T>(
  name: string,
  attributes: SpanAttributes,
  fn: (span: SpanHandle) => Promise<T>,
): Promise<T> {
  return active === undefined ? fn(NO_SPAN) : active.span(name, attributes, fn);
}

const NO_END: SpanEnd = () => {};

/** Starts a storage call's span (`insert`, `list`, ...), a database client span; without tracing, nothing. */
export function startStorageSpan(operation: string): SpanEnd {
  return active === undefined ? NO_END : active.startStorageSpan(operation);
}
