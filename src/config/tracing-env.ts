import { ConfigError } from './setting.js';

/**
 * OpenTelemetry's own environment variables (OTEL_*), read here, in the config room, like every
 * other setting the process takes from its environment. The SDK reads the same variables itself.
 */

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
