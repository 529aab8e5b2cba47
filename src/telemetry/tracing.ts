import type { Config } from '../config.js';
import { tracesWanted } from '../config/tracing-env.js';
import type { Tracing } from './span-types.js';

/**
 * OpenTelemetry traces, on when OTEL_EXPORTER_OTLP_ENDPOINT (or its _TRACES_ variant) is set.
 * This file imports no OpenTelemetry package: with the variable unset none is loaded and no
 * request hook is added. The SDK, the exporter and the request hooks are in tracing-sdk.ts,
 * imported only when traces are on; the app hands the Tracing it starts to what makes spans of
 * its own (the plants' storage calls).
 */

/** Starts the SDK in this process when traces are wanted; undefined (and nothing loaded) otherwise. */
export async function startTracing(config: Config): Promise<Tracing | undefined> {
  if (!tracesWanted()) return undefined;
  const { startSdk } = await import('./tracing-sdk.js');
  return startSdk({ dbSystem: config.database.startsWith('sqlite:') ? 'sqlite' : 'postgresql' });
}
