import type { FastifyPluginCallback, FastifyRequest } from 'fastify';
import { ConfigError, type Config } from '../config.js';

/**
 * OpenTelemetry traces, on when OTEL_EXPORTER_OTLP_ENDPOINT (or its _TRACES_ variant) is set.
 * This file is all the rest of the service sees, and it imports no OpenTelemetry package: with
 * the variable unset none is loaded, no request hook is added, and the helpers below cost one
 * test of `active`. The SDK, the exporter and the request hooks are in tracing-sdk.ts, imported
 * only when traces are on.
 */

export type SpanAttributes = Record<string, string | number | boolean>;

/** What a `withSpan` callback may do with its span. */
export interface SpanHandle {
  setAttributes(attributes: SpanAttributes): void;
}

export interface Tracing {
  /** Fastify plugin: a server span per request, the child of the request's `traceparent`. */
  requests: FastifyPluginCallback;
  /** The trace id of a request's server span, for its log line. */
  traceIdOf(request: FastifyRequest): string | undefined;
  span<T>(name: string, attributes: SpanAttributes, fn: (span: SpanHandle) => Promise<T>): Promise<T>;
  storageSpan<T>(operation: string, work: () => Promise<T>): Promise<T>;
  /** Exports the spans still buffered (bounded in time), then stops. */
  shutdown(): Promise<void>;
}

/** The one format the installed exporter (@opentelemetry/exporter-trace-otlp-http) sends. */
const PROTOCOL = 'http/json';
const PROTOCOL_VARIABLES = ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'] as const;
const ENDPOINT_VARIABLES = ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'] as const;

/** Where spans go: the first endpoint variable set (the SDK reads the same two). */
export function traceEndpoint(env: NodeJS.ProcessEnv = process.env): { variable: string; url: string } | undefined {
  const variable = ENDPOINT_VARIABLES.find((name) => (env[name] ?? '') !== '');
  return variable === undefined ? undefined : { variable, url: env[variable]! };
}

/**
 * Whether to export traces: an OTLP endpoint is set and neither OTEL_SDK_DISABLED=true nor
 * OTEL_TRACES_EXPORTER=none says otherwise. Throws a ConfigError (exit 2) for an endpoint that is
 * not an http(s) URL or a protocol other than http/json, which would otherwise fail at each export.
 */
export function tracesWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  const endpoint = traceEndpoint(env);
  if (endpoint === undefined || env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return false;
  if (!/^https?:\/\/[^/]/.test(endpoint.url) || !URL.canParse(endpoint.url)) {
    throw new ConfigError(`${endpoint.variable}=${endpoint.url}: expected an http(s) URL of an OTLP/HTTP receiver`);
  }
  for (const name of PROTOCOL_VARIABLES) {
    const protocol = env[name];
    if (protocol !== undefined && protocol !== '' && protocol !== PROTOCOL) {
      throw new ConfigError(`${name}=${protocol}: traces are sent as OTLP/HTTP JSON only; set ${PROTOCOL} or unset it`);
    }
  }
  return true;
}

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

/** A storage call (`insert`, `list`, ...) as a database client span; without tracing, the call alone. */
export function storageSpan<T>(operation: string, work: () => Promise<T>): Promise<T> {
  return active === undefined ? work() : active.storageSpan(operation, work);
}
