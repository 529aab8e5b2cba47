import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { eventually } from './wait.js';

/**
 * A client of Node's inspector (the Chrome DevTools Protocol over a WebSocket), enough to reach a
 * server's worker threads from outside: the server is started with `--inspect=127.0.0.1:0` in
 * NODE_OPTIONS, and nothing of the server's own code is involved. Node 20 has no WebSocket
 * client without a flag, so the few frames needed are written here.
 */
export class Inspector {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (result: unknown) => void; reject: (e: Error) => void }>();
  private readonly listeners: Array<(method: string, params: Record<string, unknown>) => void> = [];
  private buffered = Buffer.alloc(0);
  private watching = false;
  /** The worker threads attached: session id -> the URL of the module the thread started from. */
  private readonly workers = new Map<string, string>();

  private constructor(private readonly socket: Duplex) {
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
  }

  /** Connects to the inspector whose address the server printed on standard error. */
  static async of(stderr: string): Promise<Inspector> {
    const match = /Debugger listening on (ws:\/\/[^\s]+)/.exec(stderr);
    if (match === null) throw new Error(`no inspector address in:\n${stderr}`);
    const url = new URL(match[1]!);
    const socket = await new Promise<Duplex>((resolve, reject) => {
      const request = http.request({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-key': randomBytes(16).toString('base64'),
          'sec-websocket-version': '13',
        },
      });
      request.on('upgrade', (_response, upgraded) => resolve(upgraded));
      request.on('response', (response) => reject(new Error(`inspector answered ${response.statusCode}`)));
      request.on('error', reject);
      request.end();
    });
    return new Inspector(socket);
  }

  call(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = this.nextId++;
    this.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
  }

  on(listener: (method: string, params: Record<string, unknown>) => void) {
    this.listeners.push(listener);
  }

  /**
   * Runs `expression` in the newest worker thread whose start module's URL contains `module`, once
   * one is running: `skip` sessions already used are passed over (a thread started again is a new one).
   */
  async evaluateInWorker(module: string, expression: string, skip: ReadonlySet<string> = new Set()): Promise<string> {
    if (!this.watching) {
      this.watching = true;
      this.on((method, params) => {
        const { sessionId, workerInfo } = params as { sessionId: string; workerInfo?: { url: string } };
        if (method === 'NodeWorker.attachedToWorker') this.workers.set(sessionId, workerInfo!.url);
        if (method === 'NodeWorker.detachedFromWorker') this.workers.delete(sessionId);
      });
      await this.call('NodeWorker.enable', { waitForDebuggerOnStart: false });
    }
    const sessionId = await eventually(
      () => `a worker thread started from ${module}`,
      () => [...this.workers].filter(([id, url]) => url.includes(module) && !skip.has(id)).at(-1)?.[0],
      10_000,
      10,
    );
    const message = JSON.stringify({ id: 1, method: 'Runtime.evaluate', params: { expression } });
    await this.call('NodeWorker.sendMessageToWorker', { sessionId, message });
    return sessionId;
  }

  close() {
    this.socket.destroy();
  }

  /** One masked text frame (a client must mask). */
  private send(text: string) {
    const payload = Buffer.from(text);
    const length = payload.length;
    const head =
      length < 126
        ? Buffer.from([0x81, 0x80 | length])
        : length < 65_536
          ? Buffer.from([0x81, 0x80 | 126, length >> 8, length & 0xff])
          : Buffer.concat([Buffer.from([0x81, 0x80 | 127]), bigEndian64(length)]);
    const mask = randomBytes(4);
    const masked = Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]!));
    this.socket.write(Buffer.concat([head, mask, masked]));
  }

  /** The server's frames are unmasked and, from Node's inspector, never fragmented. */
  private receive(chunk: Buffer) {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    for (;;) {
      const frame = this.buffered;
      if (frame.length < 2) return;
      let length = frame[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (frame.length < 4) return;
        length = frame.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (frame.length < 10) return;
        length = Number(frame.readBigUInt64BE(2));
        offset = 10;
      }
      if (frame.length < offset + length) return;
      const opcode = frame[0]! & 0x0f;
      const payload = frame.subarray(offset, offset + length);
      this.buffered = frame.subarray(offset + length);
      if (opcode === 1) this.dispatch(JSON.parse(payload.toString()) as Record<string, unknown>);
    }
  }

  private dispatch(message: Record<string, unknown>) {
    if (typeof message.id === 'number') {
      const waiter = this.waiting.get(message.id);
      this.waiting.delete(message.id);
      if (message.error !== undefined) waiter?.reject(new Error(JSON.stringify(message.error)));
      else waiter?.resolve(message.result);
      return;
    }
    for (const listener of this.listeners)
      listener(message.method as string, message.params as Record<string, unknown>);
  }
}

function bigEndian64(n: number): Buffer {
  const buffer = Buffer.alloc(8);
  buffer.writeBigUInt64BE(BigInt(n));
  return buffer;
}
