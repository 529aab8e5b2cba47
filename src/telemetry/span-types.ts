import type { FastifyPluginCallback, FastifyRequest } from 'fastify';

/** What tracing offers the rest of the service, typed without loading the SDK (telemetry/tracing.ts). */

/** Ends a span; with an error, marks it failed first. */
export type SpanEnd = (error?: Error) => void;

export interface Tracing {
  /** Fastify plugin: a server span per request, the child of the request's `traceparent`. */
  requests: FastifyPluginCallback;
  /** The trace id of a request's server span, for its log line. */
  traceIdOf(request: FastifyRequest): string | undefined;
  /** Starts a storage call's client span, a child of the current one; end it once, with the error if the call failed. */
  startStorageSpan(operation: string): SpanEnd;
  /** Exports the spans still buffered (bounded in time), then stops. */
  shutdown(): Promise<void>;
}
