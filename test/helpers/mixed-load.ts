import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Keep-alive clients sending creates, reads and patches in a loop, each answer or failure counted:
 * what an upgrade or a restart must not lose. Each client is one kept-alive connection at a time
 * (an agent of its own with one socket), as a service's HTTP client is, and never retries on its
 * own: a reset, a request closed unanswered or a timeout is a failure of the server, and is counted.
 */

export type Operation = 'create' | 'read' | 'patch';

export interface Outcome {
  operation: Operation;
  /** The plant's id. */
  id: string;
  /** Sent over a kept-alive connection that an earlier request had used. */
  reused: boolean;
  /** The status, or the error's code (`ECONNRESET`, `ECONNREFUSED`, `timeout`). */
  result: number | string;
  startedAt: number;
  ms: number;
}

/** The status each operation must get. */
const EXPECTED: Record<Operation, number> = { create: 200, read: 200, patch: 200 };

/** What each patch sets: a plant that has it was patched. */
export const PATCHED_TAG = 'patched';

/** Longer than any answer may take here: a request without an answer by then is counted a timeout. */
const REQUEST_TIMEOUT_MS = 10_000;

export interface MixedLoadOptions {
  /** The server (or balancer) to send to. */
  url: string;
  token: string;
  clients: number;
  /**
   * A request refused at connect was never accepted by any process, so nothing can have been lost:
   * without a balancer (a restart on the same port) the client waits a moment and sends it again.
   * Behind a balancer a refusal is a failure like any other.
   */
  retryRefused?: boolean;
}

export class MixedLoad {
  readonly outcomes: Outcome[] = [];
  /** Ids whose create was answered 200: each must be listed afterwards. */
  readonly acknowledged = new Set<string>();
  private running = true;
  private readonly clients: Array<Promise<void>>;

  constructor(private readonly options: MixedLoadOptions) {
    this.clients = Array.from({ length: options.clients }, (_, client) => this.client(client));
  }

  /** Ends every client's loop after its current request. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.clients);
  }

  /** Outcomes that are not the expected status: resets, timeouts, refusals, wrong statuses. */
  failures(): Outcome[] {
    return this.outcomes.filter((o) => o.result !== EXPECTED[o.operation]);
  }

  /** The longest answer among requests started in [from, to]. */
  longestBetween(from: number, to: number): number {
    let longest = 0;
    for (const o of this.outcomes) if (o.startedAt >= from && o.startedAt <= to) longest = Math.max(longest, o.ms);
    return longest;
  }

  private async client(client: number): Promise<void> {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let n = 0; this.running; n++) {
        const id = String(client * 1_000_000 + n);
        const created = await this.send(agent, 'create', id, 'POST', '/plants', { id: Number(id), name: `p${id}` });
        if (created !== 200) continue;
        this.acknowledged.add(id);
        await this.send(agent, 'read', id, 'GET', `/plants/${id}`);
        await this.send(agent, 'patch', id, 'PATCH', `/plants/${id}`, { tag: PATCHED_TAG });
      }
    } finally {
      agent.destroy();
    }
  }

  /** One request, sent again while it is refused at connect when `retryRefused`; its final outcome is recorded. */
  private async send(agent: Agent, operation: Operation, id: string, method: string, path: string, body?: object) {
    for (let attempt = 0; ; attempt++) {
      const startedAt = Date.now();
      const { result, reused } = await this.once(agent, method, path, body);
      const refused = result === 'ECONNREFUSED';
      if (refused && this.options.retryRefused && attempt < 500 && this.running) {
        await sleep(20);
        continue;
      }
      this.outcomes.push({ operation, id, reused, result, startedAt, ms: Date.now() - startedAt });
      return result;
    }
  }

  private once(
    agent: Agent,
    method: string,
    path: string,
    body?: object,
  ): Promise<{ result: number | string; reused: boolean }> {
    const text = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((settle) => {
      const resolve = (result: number | string) => settle({ result, reused: req.reusedSocket });
      const req = request(
        `${this.options.url}${path}`,
        {
          method,
          agent,
          headers: {
            authorization: `Bearer ${this.options.token}`,
            ...(text === undefined ? {} : { 'content-type': 'application/json' }),
          },
        },
        (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode!));
          response.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
        },
      );
      req.setTimeout(REQUEST_TIMEOUT_MS, () => {
        resolve('timeout');
        req.destroy();
      });
      req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      req.end(text);
    });
  }
}

/** Counts of outcomes by operation and result, for a failure message or a report. */
export function tally(outcomes: Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) counts[`${o.operation} ${o.result}`] = (counts[`${o.operation} ${o.result}`] ?? 0) + 1;
  return counts;
}
