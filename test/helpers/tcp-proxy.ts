import net from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 owned by one test, between the service and its database: it forwards
 * each connection to `target`, and the test may add latency, black-hole the traffic, heal it, or
 * end every connection as the database would.
 *
 * A black hole is what a silent network does: nothing is closed, nothing arrives. The bytes each
 * side sends meanwhile are kept, not lost, as TCP keeps retransmitting them: on `heal` they are
 * delivered in order (so a COMMIT sent into the hole may still commit after the network is back),
 * and so is a close that happened meanwhile. A connection opened during the hole gets no answer
 * (its SYN is "dropped") until the heal; one its client gave up on meanwhile never reaches the target.
 *
 * A cut is an answer lost on the way back: the client's statement reaches the target, what the
 * target answers does not, and the connection then breaks.
 */

export interface TcpProxy {
  port: number;
  /** Milliseconds added to each chunk, each way (0: none). */
  latency(ms: number): void;
  /** Stops forwarding in both directions, closing nothing. */
  blackHole(): void;
  /** Forwards again, first what the hole held. */
  heal(): void;
  /**
   * Ends each connection open for `olderThanMs` or longer as a database ends one it terminates
   * or restarts under it: a close (FIN) to the client, the target's side gone. Returns how many.
   */
  endAll(olderThanMs: number): number;
  /**
   * The next chunk a client sends that matches `pattern` goes through; from then on nothing comes
   * back on that connection, and `afterMs` later both its sides are destroyed. Resolves once cut.
   */
  cutAfter(pattern: RegExp, afterMs: number): Promise<void>;
  close(): Promise<void>;
}

type Item = { chunk: Buffer; due: number } | { end: true; due: number };

/** One direction of one connection: chunks queued with their due time, written in order. */
class Lane {
  private readonly queue: Item[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly to: () => net.Socket | null,
    private readonly state: { held: boolean; latencyMs: number },
  ) {}

  push(item: { chunk: Buffer } | { end: true }) {
    this.queue.push({ ...item, due: performance.now() + this.state.latencyMs });
    this.pump();
  }

  pump() {
    const to = this.to();
    if (this.state.held || to === null || this.timer !== null) return;
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      const wait = head.due - performance.now();
      if (wait > 0.5) {
        this.timer = setTimeout(() => {
          this.timer = null;
          this.pump();
        }, wait);
        return;
      }
      this.queue.shift();
      if (to.destroyed) continue;
      if ('end' in head) to.end();
      else to.write(head.chunk);
    }
  }

  clear() {
    this.queue.length = 0;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const state = { held: false, latencyMs: 0 };
  let armed: { pattern: RegExp; afterMs: number; cut: () => void } | null = null;
  const pairs = new Set<{
    client: net.Socket;
    openedAt: number;
    upstream: () => net.Socket | null;
    lanes: Lane[];
    dial: () => void;
  }>();

  const server = net.createServer((client) => {
    let upstream: net.Socket | null = null;
    let answersLost = false;
    const toClient = new Lane(() => client, state);
    const toUpstream = new Lane(() => upstream, state);
    const pair = {
      client,
      openedAt: performance.now(),
      upstream: () => upstream,
      lanes: [toClient, toUpstream],
      dial: () => {
        if (upstream !== null || client.destroyed) return;
        upstream = net.connect(target.port, target.host);
        upstream.setNoDelay(true);
        upstream.on('data', (chunk: Buffer) => {
          if (!answersLost) toClient.push({ chunk });
        });
        upstream.on('end', () => toClient.push({ end: true }));
        upstream.on('error', () => {});
        upstream.on('close', () => {
          // Reset by the target (or refused): the client sees its connection end, once what came before is delivered.
          toClient.push({ end: true });
        });
        toUpstream.pump();
      },
    };
    pairs.add(pair);
    client.setNoDelay(true);
    client.on('data', (chunk: Buffer) => {
      toUpstream.push({ chunk });
      if (armed === null || !armed.pattern.test(chunk.toString('latin1'))) return;
      const { afterMs, cut } = armed;
      armed = null;
      answersLost = true;
      setTimeout(() => {
        client.destroy();
        upstream?.destroy();
        cut();
      }, afterMs);
    });
    client.on('end', () => toUpstream.push({ end: true }));
    client.on('error', () => {});
    client.on('close', () => {
      // A client that gave up before its connection ever went through: nothing reaches the target.
      if (upstream === null) {
        toUpstream.clear();
        pairs.delete(pair);
        return;
      }
      toUpstream.push({ end: true });
      upstream.once('close', () => pairs.delete(pair));
      if (upstream.destroyed) pairs.delete(pair);
    });
    if (!state.held) pair.dial();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;

  return {
    port,
    latency(ms) {
      state.latencyMs = ms;
    },
    blackHole() {
      state.held = true;
    },
    heal() {
      state.held = false;
      for (const pair of pairs) {
        pair.dial();
        for (const lane of pair.lanes) lane.pump();
      }
    },
    endAll(olderThanMs) {
      let ended = 0;
      for (const pair of pairs) {
        if (pair.client.writableEnded || performance.now() - pair.openedAt < olderThanMs) continue;
        for (const lane of pair.lanes) lane.clear();
        pair.client.end();
        pair.upstream()?.destroy();
        ended++;
      }
      return ended;
    },
    cutAfter(pattern, afterMs) {
      return new Promise((cut) => {
        armed = { pattern, afterMs, cut };
      });
    },
    async close() {
      state.held = false;
      for (const pair of pairs) {
        for (const lane of pair.lanes) lane.clear();
        pair.client.destroy();
        pair.upstream()?.destroy();
      }
      pairs.clear();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
