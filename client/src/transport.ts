import { PlantStoreError } from './errors.js';
import { parseJson, stringifyJson } from './json.js';
import { backoffMs, isRetryableStatus, isSafeToRepeat, parseRetryAfter, sleep, type RetryPolicy } from './retry.js';

/** What every method takes last. */
export interface RequestOptions {
  /** Aborts the call, retries and waits included; an aborted call is never retried. */
  signal?: AbortSignal;
  /** Overrides the client's `timeoutMs` for each attempt of this call. */
  timeoutMs?: number;
}

export interface Call {
  method: 'GET' | 'HEAD' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  /** An array repeats the parameter, once per value. */
  query?: Record<string, string | number | readonly string[] | undefined>;
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string | undefined>;
  /**
   * A status that, after an earlier attempt whose outcome is unknown (no answer, or a 503),
   * means that attempt took effect: a DELETE retried after its answer was lost finds nothing.
   */
  doneIfRetriedAndAnswered?: number;
}

export interface Reply {
  status: number;
  headers: Headers;
  body: unknown;
  /** The URL the call was sent to: what a relative link in the answer is relative to. */
  url: string;
}

export interface TransportOptions {
  baseUrl: string;
  token: string;
  fetch: typeof fetch;
  timeoutMs: number;
  retry: RetryPolicy;
}

/** Sends calls: auth, lossless JSON, a timeout per attempt, retries of what is safe to repeat. */
export class Transport {
  readonly #base: string;

  constructor(private readonly options: TransportOptions) {
    this.#base = new URL(options.baseUrl).href.replace(/\/+$/, '');
  }

  async send(call: Call, { signal, timeoutMs = this.options.timeoutMs }: RequestOptions = {}): Promise<Reply> {
    const url = new URL(this.#base + call.path);
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (typeof value === 'object') for (const each of value) url.searchParams.append(name, each);
      else if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers = new Headers({ authorization: `Bearer ${this.options.token}`, accept: 'application/json' });
    for (const [name, value] of Object.entries(call.headers ?? {})) if (value !== undefined) headers.set(name, value);
    let body: string | undefined;
    if (call.body !== undefined) {
      headers.set('content-type', call.contentType ?? 'application/json');
      body = stringifyJson(call.body);
    }
    const { retry } = this.options;
    const repeatable = isSafeToRepeat(call.method, call.path, headers);
    let uncertain = false;
    for (let attempt = 1; ; attempt++) {
      const last = !repeatable || attempt > retry.retries;
      let answer: { status: number; headers: Headers; text: string };
      try {
        answer = await this.#attempt(url, { method: call.method, headers, body }, signal, timeoutMs);
      } catch (error) {
        if (signal?.aborted || last) throw signal?.aborted ? signal.reason : error;
        uncertain = true;
        await sleep(backoffMs(retry, attempt - 1), signal);
        continue;
      }
      const { status } = answer;
      if ((status >= 200 && status < 300) || status === 304 || (uncertain && status === call.doneIfRetriedAndAnswered))
        return {
          status,
          headers: answer.headers,
          body: answer.text === '' ? undefined : parseJson(answer.text),
          url: url.href,
        };
      const error = toError(answer, attempt);
      const waitMs = error.retryAfter !== undefined ? error.retryAfter * 1000 : backoffMs(retry, attempt - 1);
      if (last || !isRetryableStatus(status) || waitMs > retry.maxDelayMs) throw error;
      uncertain ||= status === 503;
      await sleep(waitMs, signal);
    }
  }

  /**
   * A GET whose answer is a stream (the change feed): the open response on a 2xx, else the typed
   * error. No timeout (the stream stays open) and no retries here: the caller reconnects.
   */
  async openStream(path: string, headers: Record<string, string | undefined>, signal?: AbortSignal): Promise<Response> {
    const sent = new Headers({ authorization: `Bearer ${this.options.token}` });
    for (const [name, value] of Object.entries(headers)) if (value !== undefined) sent.set(name, value);
    const response = await this.options.fetch(this.#base + path, { method: 'GET', headers: sent, signal });
    if (response.status >= 200 && response.status < 300) return response;
    throw toError({ status: response.status, headers: response.headers, text: await response.text() }, 1);
  }

  /** One request and its whole body, within `timeoutMs`: a body cut short is a failed attempt too. */
  async #attempt(url: URL, init: RequestInit, signal: AbortSignal | undefined, timeoutMs: number) {
    const timeout = AbortSignal.timeout(timeoutMs);
    const response = await this.options.fetch(url, {
      ...init,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  }
}

/** The server's `Error` body when there is one; otherwise (a proxy's page, say) the status alone. */
function toError(answer: { status: number; headers: Headers; text: string }, attempts: number): PlantStoreError {
  let body: unknown;
  try {
    body = parseJson(answer.text);
  } catch {
    body = undefined;
  }
  const retryAfter = parseRetryAfter(answer.headers.get('retry-after'));
  const { error, message } = (body ?? {}) as { error?: unknown; message?: unknown };
  if (typeof error === 'number' && typeof message === 'string')
    return new PlantStoreError(answer.status, error, message, retryAfter, attempts);
  const detail = answer.text.trim().slice(0, 200);
  return new PlantStoreError(
    answer.status,
    answer.status,
    `HTTP ${answer.status}${detail ? `: ${detail}` : ''}`,
    retryAfter,
    attempts,
  );
}

/** The URL of a `Link: <...>; rel="next"` header, resolved against `base` (the server sends it relative), or null. */
export function nextLink(headers: Headers, base: string): string | null {
  for (const part of (headers.get('link') ?? '').split(/,(?=\s*<)/)) {
    const match = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (match && /;\s*rel="?(?:[^"]*\s)?next(?:\s[^"]*)?"?\s*(?:;|$)/i.test(match[2]!)) {
      return new URL(match[1]!, base).href;
    }
  }
  return null;
}
