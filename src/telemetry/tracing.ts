import type { Config } from '../config.js';
import { tracesWanted } from '../config/tracing-env.js';
import type { SpanAttributes, SpanHandle, Tracing } from './span-types.js';

/**
 * OpenTelemetry traces, on when OTEL_EXPORTER_OTLP_ENDPOINT (or its _TRACES_ variant) is set.
 * This file imports no OpenTelemetry package: with the variable unset none is loaded, no request
 * hook is added, and withSpan costs one test of `active`. The SDK, the exporter and the request
 * hooks are in tracing-sdk.ts, imported only when traces are on; the app hands the Tracing it
 * starts to what makes spans of its own (the plants' storage calls).
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
