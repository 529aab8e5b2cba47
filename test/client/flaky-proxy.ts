import { createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What the proxy does with one request: forward it ('pass'); close the connection before
 * forwarding ('drop-before') or after the server has answered ('drop-after', so the change is
 * made but its answer lost); never answer ('hang'); or answer a status of its own with
 * `Retry-After`, without forwarding.
 */
export type Fault = 'pass' | 'drop-before' | 'drop-after' | 'hang' | { status: 429 | 503; retryAfter: string };

export interface SeenRequest {
  method: string;
  path: string;
  fault: string;
}

export interface FlakyProxy {
  url: string;
  /** Every request in arrival order, with what was done to it. */
  seen: SeenRequest[];
  /** Faults for the next requests, in order, before `plan` is asked. */
  script: Fault[];
  /** Chooses the fault of each request once `script` is empty (at first, always 'pass'). */
  plan: Plan;
  close(): Promise<void>;
}

/** `plan` chooses a fault for each request: `nth` is how many identical requests came before. */
export type Plan = (request: { method: string; path: string; body: string }, nth: number) => Fault;

export async function startFlakyProxy(upstream: string): Promise<FlakyProxy> {
  const target = new URL(upstream);
  const timesSeen = new Map<string, number>();
  const seen: SeenRequest[] = [];
  const proxy = { seen, script: [] as Fault[], plan: (() => 'pass') as Plan };
  const server = createServer(async (req, res) => {
    const body = await readAll(req);
    const key = `${req.method} ${req.url} ${body}`;
    const nth = timesSeen.get(key) ?? 0;
    timesSeen.set(key, nth + 1);
    const fault = proxy.script.shift() ?? proxy.plan({ method: req.method!, path: req.url!, body }, nth);
    seen.push({ method: req.method!, path: req.url!, fault: typeof fault === 'string' ? fault : String(fault.status) });
    if (fault === 'hang') return;
    if (fault === 'drop-before') return void req.socket.destroy();
    if (typeof fault === 'object') {
      const text = JSON.stringify({ error: fault.status, message: 'injected by the flaky proxy' });
      return void res
        .writeHead(fault.status, { 'content-type': 'application/json', 'retry-after': fault.retryAfter })
        .end(text);
    }
    // The Host header goes through unchanged, so the server's Link URLs name the proxy.
    const upstreamRequest = request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      async (answer) => {
        const answerBody = await readAll(answer);
        if (fault === 'drop-after') return void req.socket.destroy();
        res.writeHead(answer.statusCode!, answer.headers).end(answerBody);
      },
    );
    upstreamRequest.on('error', () => req.socket.destroy());
    upstreamRequest.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(proxy, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}

async function readAll(stream: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
