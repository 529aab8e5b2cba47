import http from 'node:http';
import https from 'node:https';
import { NOT_ALLOWED, type AddressGuard } from './address-guard.js';

/** What one POST to a receiver came to: its status (any status at all), or why there was none. */
export interface AttemptResult {
  status: number | null;
  error: string | null;
  /** `Retry-After` of the answer, in milliseconds from now, when it had a valid one. */
  retryAfterMs: number | null;
}

/** A receiver's answer body is read and thrown away; past this many bytes the connection is cut. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export function retryAfterMs(header: string | undefined, now: number): number | null {
  if (header === undefined) return null;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function describe(error: Error & { code?: string }, timeoutMs: number): string {
  if (error.code === 'ETIMEDOUT_ATTEMPT') return `no answer within ${timeoutMs / 1000} s`;
  if (error.code === 'ECONNREFUSED') return 'connection refused';
  if (error.code === 'ENOTFOUND' || error.code === 'EAI_AGAIN') return 'host not found';
  if (error.code === 'ECONNRESET') return 'connection reset';
  return error.message;
}

/**
 * Connections to receivers, through the guard's `lookup`: keep-alive, so a busy endpoint is not
 * a new connection (and TLS handshake) per event. Node's agent closes an idle socket before the
 * receiver's advertised `Keep-Alive: timeout` runs out.
 */
export function receiverAgents(guard: AddressGuard) {
  const options = { keepAlive: true, lookup: guard.lookup };
  return { http: new http.Agent(options), https: new https.Agent(options) };
}

export type ReceiverAgents = ReturnType<typeof receiverAgents>;

/**
 * One POST. The whole attempt (resolving, connecting, TLS, the answer's headers) has `timeoutMs`;
 * the body of the answer gets what remains of it and at most MAX_RESPONSE_BYTES, never kept.
 * Redirects are not followed: a 3xx is an answer like any other non-2xx.
 */
export function attempt(
  target: string,
  headers: Record<string, string>,
  body: string,
  { timeoutMs, guard, agents }: { timeoutMs: number; guard: AddressGuard; agents: ReceiverAgents },
): Promise<AttemptResult> {
  const url = new URL(target);
  const refused = guard.refusalOfUrl(url);
  if (refused !== null) return Promise.resolve({ status: null, error: NOT_ALLOWED + refused, retryAfterMs: null });

  return new Promise((resolve) => {
    const client = url.protocol === 'https:' ? https : http;
    const agent = url.protocol === 'https:' ? agents.https : agents.http;
    const request = client.request(url, {
      method: 'POST',
      agent,
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
    });
    const deadline = setTimeout(() => {
      request.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT_ATTEMPT' }));
    }, timeoutMs);
    let answered = false;
    request.on('response', (response) => {
      answered = true;
      resolve({
        status: response.statusCode ?? null,
        error: null,
        retryAfterMs: retryAfterMs(response.headers['retry-after'], Date.now()),
      });
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_RESPONSE_BYTES) response.destroy();
      });
      response.on('close', () => clearTimeout(deadline));
    });
    request.on('error', (error) => {
      clearTimeout(deadline);
      if (!answered) resolve({ status: null, error: describe(error, timeoutMs), retryAfterMs: null });
    });
    request.end(body);
  });
}
