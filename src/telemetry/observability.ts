import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import fp from 'fastify-plugin';
import type pino from 'pino';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import { httpDuration } from './metrics.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The request line of this route is logged at debug, not info (see PROBE_ROUTE). */
    probe?: boolean;
  }
  interface FastifyRequest {
    /** The route to count a request under when Fastify matched none: a 405 names its path's route. */
    metricsRoute: string | null;
  }
}

/**
 * Route config of /healthz, /readyz and /metrics: probes and scrapes come every few seconds from
 * machines, and at info their lines would drown the requests of people; at debug they are there
 * when wanted.
 */
export const PROBE_ROUTE = { probe: true };

/** Secrets a client put in the URL by mistake (`?access_token=...`): API tokens, JWTs, access_token values. */
const SECRET_IN_URL = /pst_[\w-]+|eyJ[\w-]*\.[\w-]*\.[\w-]*|(?<=[?&]access_token=)[^&#]*/g;
/** Cheaper than SECRET_IN_URL on a URL that holds none, as nearly every URL. */
const MAY_HOLD_SECRET = /pst_|eyJ|access_token=/;

/** The request URL as logged: tokens never reach the logs, wherever the client put them. */
export function loggableUrl(url: string): string {
  return MAY_HOLD_SECRET.test(url) ? url.replace(SECRET_IN_URL, '[redacted]') : url;
}

const CLIENT_REQUEST_ID = /^[\w.:@-]{1,128}$/;

/** A request id that looks like a token (see SECRET_IN_URL) is replaced rather than logged. */
const LOOKS_SECRET = /pst_|eyJ/;

/** A client's `X-Request-Id` when it is sane (no log injection, no token by mistake), else a fresh UUID. */
export function requestId(request: { headers: Record<string, string | string[] | undefined> }): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && CLIENT_REQUEST_ID.test(given) && !LOOKS_SECRET.test(given) ? given : randomUUID();
}

type Bindings = Record<string, unknown>;

/**
 * `request.log`, made only when something logs through it. Fastify gives every request a pino child
 * (its bindings serialized at once, a cost on every request: bench/analysis.md, "what each optimisation is worth"), but most requests
 * log nothing through it: their one line is written by the onResponse hook below. Fastify's
 * `childLoggerFactory` option; the child is the one Fastify would have made.
 */
class RequestLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: pino.ChildLoggerOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  get level() {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }
  set level(level: string) {
    this.logger.level = level;
  }
  fatal(...args: Parameters<pino.LogFn>) {
    this.logger.fatal(...args);
  }
  error(...args: Parameters<pino.LogFn>) {
    this.logger.error(...args);
  }
  warn(...args: Parameters<pino.LogFn>) {
    this.logger.warn(...args);
  }
  info(...args: Parameters<pino.LogFn>) {
    this.logger.info(...args);
  }
  debug(...args: Parameters<pino.LogFn>) {
    this.logger.debug(...args);
  }
  trace(...args: Parameters<pino.LogFn>) {
    this.logger.trace(...args);
  }
  silent() {}
  child(bindings: Bindings, options?: pino.ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

export function lazyChildLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: pino.ChildLoggerOptions,
): FastifyBaseLogger {
  return new RequestLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
}

function routeLabel(request: FastifyRequest): string {
  return request.routeOptions.url ?? request.metricsRoute ?? 'unmatched';
}

/** Where the log's lines go: buffered standard output (log-output.ts), or the tests' capture stream. */
export interface LogDestination {
  write(line: string): unknown;
}

export interface ObservabilityOptions {
  /** With traces on: the trace id of a request, added to its log line. */
  traceIdOf?: (request: FastifyRequest) => string | undefined;
  /** The destination pino writes to: the request lines are written there too. */
  destination: LogDestination;
}

const INFO = 30;
const DEBUG = 20;
/** Characters JSON escapes (and lone surrogates): a string without them is quoted as it is, as pino does. */
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/;
const json = (text: string) => (NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`);

/**
 * The request line, in the JSON pino writes (`level`, `time`, `pid`, `hostname`, `reqId`, then
 * the fields, then `msg`), built as one string: pino's generic serializer (a loop over the keys,
 * escaping each value, then the buffer's length bookkeeping) was a large part of a GET's time
 * (bench/analysis.md, "what each optimisation is worth"). Strings
 * are escaped as JSON when they need it, except the method, which Node's parser keeps to the
 * letters of a known method; `account` is left out when there is none, as pino does.
 */
function requestLine(
  base: string,
  level: number,
  request: FastifyRequest,
  route: string,
  status: number,
  durationMs: number,
  traceId: string | undefined,
) {
  const account = request.caller?.account;
  return (
    `{"level":${level},"time":${Date.now()},${base},"reqId":${json(request.id)},"method":"${request.method}"` +
    `,"route":${json(route)},"url":${json(loggableUrl(request.url))},"status":${status}` +
    (account === undefined ? '' : `,"account":${json(account)}`) +
    `,"durationMs":${durationMs}` +
    // Only with traces on.
    (traceId === undefined ? '' : `,"traceId":${json(traceId)}`) +
    ',"msg":"request"}\n'
  );
}

/** One JSON log line and the HTTP metrics for every request; the request id echoed back. */
async function observabilityPlugin(app: FastifyInstance, { traceIdOf, destination }: ObservabilityOptions) {
  app.decorateRequest('metricsRoute', null);
  const logRequests = (app.log as pino.Logger).isLevelEnabled('info');
  const logProbes = (app.log as pino.Logger).isLevelEnabled('debug');
  const base = `"pid":${process.pid},"hostname":${json(hostname())}`;

  // Callback-style hooks: an async hook costs a promise and a microtask on every request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const route = routeLabel(request);
    const elapsedMs = reply.elapsedTime;
    httpDuration.of(request.method, route, String(reply.statusCode)).observe(elapsedMs / 1000);
    const probe = request.routeOptions.config?.probe === true;
    if (probe ? logProbes : logRequests) {
      const durationMs = Math.round(elapsedMs * 100) / 100;
      const level = probe ? DEBUG : INFO;
      destination.write(requestLine(base, level, request, route, reply.statusCode, durationMs, traceIdOf?.(request)));
    }
    done();
  });
}

export const observability = fp(observabilityPlugin, { name: 'observability' });
