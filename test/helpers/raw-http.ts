import assert from 'node:assert/strict';
import net from 'node:net';

/** Raw HTTP/1.1 over node:net: any bytes (requests fetch would refuse to send), and exactly what came back (or that nothing did). */

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface RawExchange {
  /** Final responses parsed from what the server sent (1xx interim responses skipped). */
  responses: RawResponse[];
  /** Everything the server sent. */
  raw: Buffer;
  /** A socket error such as ECONNRESET, if one happened. */
  error?: string;
  /** True when we gave up waiting before the server closed. */
  timedOut: boolean;
  /** Milliseconds from connect to close. */
  elapsedMs: number;
}

export interface RawOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** The request was HEAD: responses have no body. */
  isHead?: boolean;
  /** Stop at the first complete final response instead of waiting for the server to close. */
  untilResponse?: boolean;
}

/** Sends `bytes` (all at once) and collects the reply until the server closes the connection. */
export function rawExchange(port: number, bytes: Buffer | string, options: RawOptions = {}): Promise<RawExchange> {
  const { timeoutMs = 10_000, isHead = false, untilResponse = false } = options;
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let error: string | undefined;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      socket.destroy();
    }, timeoutMs);
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (untilResponse && completeResponses(Buffer.concat(chunks), isHead) > 0) socket.destroy();
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error ??= e.code ?? e.message;
    });
    socket.on('close', () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks);
      let responses: RawResponse[];
      try {
        responses = parseResponses(raw, isHead);
      } catch (parseError) {
        error ??= `unparsable response: ${(parseError as Error).message}`;
        responses = [];
      }
      resolve({ responses, raw, error, timedOut, elapsedMs: Date.now() - started });
    });
  });
}

function completeResponses(raw: Buffer, isHead: boolean): number {
  try {
    return parseResponses(raw, isHead, false).length;
  } catch {
    return 0;
  }
}

/** Parses a byte stream of HTTP/1.1 responses (Content-Length, chunked, or read-to-close). */
export function parseResponses(raw: Buffer, isHead = false, readToClose = true): RawResponse[] {
  const responses: RawResponse[] = [];
  let at = 0;
  while (at < raw.length) {
    const headEnd = raw.indexOf('\r\n\r\n', at);
    if (headEnd === -1)
      throw new Error(`incomplete response head: ${JSON.stringify(raw.subarray(at).toString('latin1'))}`);
    const lines = raw.subarray(at, headEnd).toString('latin1').split('\r\n');
    const statusLine = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!);
    if (!statusLine) throw new Error(`not a status line: ${JSON.stringify(lines[0])}`);
    const status = Number(statusLine[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
    }
    at = headEnd + 4;
    if (status >= 100 && status < 200) continue;
    let body: Buffer;
    if (isHead || status === 204 || status === 304) {
      body = Buffer.alloc(0);
    } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = raw.indexOf('\r\n', at);
        if (lineEnd === -1) throw new Error('incomplete chunked body');
        const size = parseInt(raw.subarray(at, lineEnd).toString('latin1'), 16);
        if (Number.isNaN(size)) throw new Error('bad chunk size');
        at = lineEnd + 2;
        if (size === 0) {
          const trailerEnd = raw.indexOf('\r\n', at);
          at = trailerEnd === -1 ? raw.length : trailerEnd + 2;
          break;
        }
        if (at + size > raw.length) throw new Error('incomplete chunk');
        parts.push(raw.subarray(at, at + size));
        at += size + 2;
      }
      body = Buffer.concat(parts);
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (at + length > raw.length) throw new Error(`body shorter than Content-Length ${length}`);
      body = raw.subarray(at, at + length);
      at += length;
    } else {
      if (!readToClose) throw new Error('a body delimited by the end of the connection');
      body = raw.subarray(at);
      at = raw.length;
    }
    responses.push({ status, headers, body });
  }
  return responses;
}

// ---------------------------------------------------------------------------------------------
// The contract's Error body.

/** `{"error": <the status>, "message": <string>}` with Content-Type application/json, nothing else. */
export function assertErrorBody(status: number, contentType: string | undefined | null, body: string, context = '') {
  const where = context ? ` (${context})` : '';
  assert.match(
    contentType ?? '',
    /^application\/json\b/i,
    `Content-Type of a ${status} must be application/json${where}`,
  );
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    assert.fail(`the ${status} body is not JSON${where}: ${JSON.stringify(body.slice(0, 200))}`);
  }
  assert.ok(
    typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed),
    `Error body must be an object${where}`,
  );
  const { error, message, ...rest } = parsed as Record<string, unknown>;
  assert.equal(error, status, `Error.error must be the HTTP status${where}: ${body}`);
  assert.ok(Number.isInteger(error), `Error.error must be an integer${where}`);
  assert.equal(typeof message, 'string', `Error.message must be a string${where}: ${body}`);
  assert.deepEqual(Object.keys(rest), [], `Error has only "error" and "message"${where}: ${body}`);
}
