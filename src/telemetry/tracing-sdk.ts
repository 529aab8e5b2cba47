import { SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  NodeTracerProvider,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_DB_OPERATION_NAME, ATTR_DB_SYSTEM_NAME, ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { FastifyBaseLogger } from 'fastify';
import fp from 'fastify-plugin';
import { addRequestSpans, type RequestSpan } from './tracing-requests.js';
import { traceEndpoint } from '../config/tracing-env.js';
import type { Tracing } from './span-types.js';

/** Loaded by tracing.ts only when traces are on: the OpenTelemetry SDK, set up once per process. */

const SERVICE_NAME = 'plant-store';
/** A receiver that does not answer must not hold a stopping process: at most this long to export the last spans. */
const SHUTDOWN_FLUSH_MS = 3_000;

export interface SdkOptions {
  /** `db.system.name` of the storage spans. */
  dbSystem: 'sqlite' | 'postgresql';
}

/**
 * The OTLP exporter, telling the log when exports start failing and when they work again (one
 * line each, not one per batch: a receiver that is down must not flood the log).
 */
class ReportingExporter implements SpanExporter {
  /** The app's log, once the app is built. */
  log: FastifyBaseLogger | undefined;
  private failing = false;

  constructor(private readonly inner: SpanExporter) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
    this.inner.export(spans, (result) => {
      const failed = result.code !== ExportResultCode.SUCCESS;
      if (failed && !this.failing) {
        this.log?.warn({ err: result.error }, 'traces: export failed; spans are dropped until the receiver answers');
      }
      if (!failed && this.failing) this.log?.info('traces: export works again');
      this.failing = failed;
      done(result);
    });
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

function failed(span: Span, error: Error) {
  span.recordException(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
}

export async function startSdk({ dbSystem }: SdkOptions): Promise<Tracing> {
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector, merged last) win over these.
  // Not processDetector: it records the command line, which may hold a database password.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: SERVICE_NAME, 'process.pid': process.pid }))
    .merge(detectResources({ detectors: [hostDetector, envDetector] }));
  await resource.waitForAsyncAttributes?.();
  const serviceName = resource.attributes[ATTR_SERVICE_NAME];
  const exporter = new ReportingExporter(new OTLPTraceExporter());
  // The exporter reads OTEL_EXPORTER_OTLP_* and the processor OTEL_BSP_*; the provider OTEL_TRACES_SAMPLER.
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  const tracer = trace.getTracer(SERVICE_NAME);
  const requests = new WeakMap<object, RequestSpan>();

  return {
    requests: fp(
      (app, _options, done) => {
        exporter.log = app.log;
        const { variable, url } = traceEndpoint()!;
        const endpoint = new URL(url);
        endpoint.username = endpoint.password = ''; // never log credentials
        app.log.info(
          { [variable]: endpoint.href, service: serviceName },
          'traces: exporting spans over OTLP/HTTP JSON',
        );
        addRequestSpans(app, tracer, requests);
        done();
      },
      { name: 'tracing' },
    ),
    traceIdOf: (request) => requests.get(request)?.span.spanContext().traceId,
    startStorageSpan(operation) {
      const span = tracer.startSpan(`storage ${operation}`, {
        kind: SpanKind.CLIENT,
        attributes: { [ATTR_DB_SYSTEM_NAME]: dbSystem, [ATTR_DB_OPERATION_NAME]: operation },
      });
      return (error) => {
        if (error !== undefined) failed(span, error);
        span.end();
      };
    },
    async shutdown() {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_FLUSH_MS, 'late')));
      const outcome = await Promise.race([provider.shutdown().then(() => 'done' as const), late]);
      clearTimeout(timer);
      if (outcome === 'late')
        exporter.log?.warn(`traces: the last spans were not exported within ${SHUTDOWN_FLUSH_MS} ms; dropped`);
    },
  };
}
