import assert from 'node:assert/strict';
import http from 'node:http';

/**
 * How long the heavier tests run, and a keep-alive HTTP client fast enough to saturate the server.
 * Raw sockets are in raw-http.ts, what the kernel says of a process in proc.ts.
 */

/** `npm run test:long` sets LONG=1: the same tests, more cases and longer runs (still bounded). */
export const LONG = process.env.LONG === '1';

export function scaled<T>(short: T, long: T): T {
  return LONG ? long : short;
}

// ---------------------------------------------------------------------------------------------
// A keep-alive client (node:http) for load: fetch is slower than the server under test.

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

export class LoadClient {
  private readonly agent: http.Agent;
  private readonly base: URL;

  constructor(base: string, sockets: number) {
    this.base = new URL(base);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  }

  request(method: string, path: string, token: string, body?: string): Promise<Answer> {
    const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${token}` };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: this.base.hostname, port: this.base.port, method, path, headers, agent: this.agent },
        collectAnswer(resolve, reject),
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  post(token: string, plant: object | string): Promise<Answer> {
    return this.request('POST', '/plants', token, typeof plant === 'string' ? plant : JSON.stringify(plant));
  }

  get(token: string, path: string): Promise<Answer> {
    return this.request('GET', path, token);
  }

  /** Every plant of the token's account, by following the streamed full listing. */
  async all(token: string): Promise<Array<{ name: string; tag?: string }>> {
    const answer = await this.get(token, '/plants');
    assert.equal(answer.status, 200, answer.text);
    return JSON.parse(answer.text) as Array<{ name: string; tag?: string }>;
  }

  close() {
    this.agent.destroy();
  }
}

/** One request on its own connection (closed after it): nothing is left for a graceful stop to wait on. */
export function oneShot(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: init.method ?? 'GET', headers: init.headers, agent: false },
      collectAnswer(resolve, reject),
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** Runs `worker` on `count` concurrent lanes until each returns. */
export async function lanes(count: number, worker: (lane: number) => Promise<void>): Promise<void> {
  await Promise.all(Array.from({ length: count }, (_, lane) => worker(lane)));
}

/** A response handler that reads the whole body and resolves with status, headers and text. */
function collectAnswer(resolve: (answer: Answer) => void, reject: (error: Error) => void) {
  return (res: http.IncomingMessage) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('end', () =>
      resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
    );
    res.on('error', reject);
  };
}
