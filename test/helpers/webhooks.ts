import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { call, type Reply } from './http.js';
import { eventually } from './wait.js';

/** A webhook receiver on 127.0.0.1, as a subscriber would run one, and the API calls the tests make. */

export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  event: string;
  contentType: string;
  path: string;
  body: string;
  /** When it arrived (ms since the epoch). */
  at: number;
  headers: Record<string, string>;
}

/** How the receiver answers: a status (and headers), or never. */
export type Answer = { status: number; headers?: Record<string, string> } | 'hang';

export class Receiver {
  readonly received: Received[] = [];
  /** TCP connections accepted so far. */
  connections = 0;
  answer: (request: Received, index: number) => Answer = () => ({ status: 200 });
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: http.Server) {
    server.on('connection', (socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    server.on('request', (request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        const header = (name: string) => String(request.headers[name] ?? '');
        const received: Received = {
          id: header('webhook-id'),
          timestamp: header('webhook-timestamp'),
          signature: header('webhook-signature'),
          event: header('plant-store-event'),
          contentType: header('content-type'),
          path: request.url ?? '',
          body,
          at: Date.now(),
          headers: Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)])),
        };
        this.received.push(received);
        const answer = this.answer(received, this.received.length - 1);
        if (answer === 'hang') return;
        response.writeHead(answer.status, answer.headers).end('thanks');
      });
    });
  }

  static async start(port = 0): Promise<Receiver> {
    const server = http.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    return new Receiver(server);
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  ids(): string[] {
    return this.received.map((r) => r.id);
  }

  /** Waits until `count` requests have arrived (matching `which`, when given). */
  async waitFor(count: number, which: (r: Received) => boolean = () => true, timeoutMs = 30_000): Promise<Received[]> {
    return eventually(
      () => `${count} webhook requests (${this.received.filter(which).length} arrived)`,
      () => {
        const matching = this.received.filter(which);
        return matching.length >= count ? matching : undefined;
      },
      timeoutMs,
      50,
    );
  }

  /** Stops listening and cuts every connection, hanging ones included. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Verifies as a receiver does, with the `standardwebhooks` package; throws when the signature is wrong. */
export function verify(secret: string, received: Received): unknown {
  return new Webhook(secret).verify(received.body, {
    'webhook-id': received.id,
    'webhook-timestamp': received.timestamp,
    'webhook-signature': received.signature,
  });
}

/** The settings every webhook test server runs with: local receivers, short retries, a short timeout. */
export const WEBHOOK_TEST_ARGS = [
  '--webhook-allow-private',
  '--webhook-retry-schedule',
  '1s,1s',
  '--webhook-timeout',
  '2s',
];

export interface Endpoint {
  id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  createdAt: string;
  secret: string;
}

function json(method: string, token: string, body: unknown): RequestInit & { token: string } {
  return { method, token, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

export function createWebhook(base: string, token: string, body: unknown): Promise<Reply> {
  return call(`${base}/webhooks`, json('POST', token, body));
}

/** Registers an endpoint and returns it with its secret; fails the test unless 201. */
export async function registerEndpoint(base: string, token: string, body: object): Promise<Endpoint> {
  const reply = await createWebhook(base, token, body);
  if (reply.status !== 201) throw new Error(`POST /webhooks answered ${reply.status}: ${reply.text}`);
  return reply.json as Endpoint;
}

export function patchWebhook(base: string, token: string, id: string, body: unknown): Promise<Reply> {
  return call(`${base}/webhooks/${id}`, json('PATCH', token, body));
}

export function recover(base: string, token: string, id: string, body: unknown): Promise<Reply> {
  return call(`${base}/webhooks/${id}/recover`, json('POST', token, body));
}

export interface DeliveryView {
  eventId: string;
  eventType: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
}

export async function deliveries(base: string, token: string, id: string): Promise<DeliveryView[]> {
  const reply = await call(`${base}/webhooks/${id}/deliveries`, { token });
  if (reply.status !== 200) throw new Error(`deliveries answered ${reply.status}: ${reply.text}`);
  return reply.json as DeliveryView[];
}

export function patchPlant(base: string, token: string, id: string, body: unknown, headers = {}): Promise<Reply> {
  return call(`${base}/plants/${id}`, {
    method: 'PATCH',
    token,
    headers: { 'content-type': 'application/merge-patch+json', ...headers },
    body: JSON.stringify(body),
  });
}

export function deletePlant(base: string, token: string, id: string, headers = {}): Promise<Reply> {
  return call(`${base}/plants/${id}`, { method: 'DELETE', token, headers });
}
