import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
} from '@opentelemetry/semantic-conventions';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { loggableUrl } from './observability.js';

/** Loaded with tracing-sdk.ts only when traces are on: the server span of every request. */

/** The account of the caller, on server spans (OpenTelemetry has no stable attribute for a tenant). */
const ATTR_ACCOUNT = 'plant_store.account';

export interface RequestSpan {
  span: Span;
  /** The caller's context from `traceparent` (or none). */
  parent: Context;
  /** What went wrong, when the answer is an error: recorded on the span if it is a 5xx. */
  error?: Error;
  ended?: boolean;
}

function startSpan(tracer: Tracer, request: FastifyRequest, parent: Context): Span {
  const route = request.routeOptions.url;
  const attributes = {
    [ATTR_HTTP_REQUEST_METHOD]: request.method,
    [ATTR_URL_PATH]: loggableUrl(request.url.split('?', 1)[0]!),
    [ATTR_URL_SCHEME]: request.protocol,
    [ATTR_CLIENT_ADDRESS]: request.ip,
    [ATTR_NETWORK_PROTOCOL_VERSION]: request.raw.httpVersion,
    ...(route !== undefined && { [ATTR_HTTP_ROUTE]: route }),
    ...(request.headers['user-agent'] !== undefined && { [ATTR_USER_AGENT_ORIGINAL]: request.headers['user-agent'] }),
  };
  // Named by the route template, never the URL: one name per operation, and no ids or tokens in names.
  const name = route === undefined ? request.method : `${request.method} ${route}`;
  return tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
}

function end(entry: RequestSpan | undefined, request: FastifyRequest, status: number | 'aborted') {
  if (entry === undefined || entry.ended) return;
  entry.ended = true;
  const { span, error } = entry;
  if (request.caller) span.setAttribute(ATTR_ACCOUNT, request.caller.account);
  if (status === 'aborted') {
    // The client went away before its answer: like a 4xx, the client's doing, so not marked as failed.
    span.setAttribute(ATTR_ERROR_TYPE, 'aborted');
  } else {
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
    if (status >= 500) {
      span.setAttribute(ATTR_ERROR_TYPE, String(status));
      if (error) span.recordException(error);
      span.setStatus({ code: SpanStatusCode.ERROR, ...(error && { message: error.message }) });
    }
  }
  span.end();
}

/**
 * A server span per request, the child of the incoming `traceparent` (W3C trace context), named by
 * method and route template, with status, route and account. It starts as the request arrives;
 * the handler runs inside its context (entered in the first preHandler hook, after the body is
 * parsed: the parser's callbacks come from socket events, outside any request's context), so the
 * storage spans of the handler are its children.
 */
export function addRequestSpans(app: FastifyInstance, tracer: Tracer, requests: WeakMap<object, RequestSpan>) {
  app.addHook('onRequest', (request, _reply, done) => {
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    requests.set(request, { span: startSpan(tracer, request, parent), parent });
    done();
  });
  app.addHook('preHandler', (request, _reply, done) => {
    const { span, parent } = requests.get(request)!; // set by the onRequest hook above
    context.with(trace.setSpan(parent, span), done);
  });
  app.addHook('onError', (request, _reply, error, done) => {
    const entry = requests.get(request);
    if (entry) entry.error = error;
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    end(requests.get(request), request, reply.statusCode);
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    end(requests.get(request), request, 'aborted');
    done();
  });
}
