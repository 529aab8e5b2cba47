import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { freePort } from './ports.js';
import { eventually } from './wait.js';

/**
 * A real Redis owned by one test: `redis-server` on a free port of 127.0.0.1, keeping nothing on
 * disk, which the test may stop, start again on the same port, pause and resume. Never the shared
 * Redis of the machine (6379), which other tests use at the same time.
 */

const BINARY = process.env.REDIS_SERVER_PATH ?? 'redis-server';

/** Whether a Redis on `port` answers PING within `withinMs`. */
function pong(port: number, withinMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(withinMs, () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => finish(data.toString().startsWith('+PONG')));
    socket.once('error', () => finish(false));
  });
}

export interface TestRedis {
  port: number;
  url: string;
  /** Starts it (again) on its port and resolves once it answers. */
  start(): Promise<void>;
  /** Sends the signal and, unless it is SIGSTOP or SIGCONT, waits for the process to exit. */
  signal(signal: NodeJS.Signals): Promise<void>;
  /** Ends it whatever its state (a paused process is resumed so that it can exit). */
  stop(): Promise<void>;
}

export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let log = '';
  const redis: TestRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
      const started = spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      child = started;
      started.stdout!.on('data', (chunk: Buffer) => (log += chunk.toString()));
      started.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
      exited = new Promise((resolve) => started.once('exit', () => resolve()));
      await eventually(
        () => `redis-server to answer on ${port}:\n${log}`,
        async () => {
          if (started.exitCode !== null) throw new Error(`redis-server exited with ${started.exitCode}:\n${log}`);
          return (await pong(port, 500)) || undefined;
        },
        10_000,
        20,
      );
    },
    async signal(signal) {
      child?.kill(signal);
      if (signal !== 'SIGSTOP' && signal !== 'SIGCONT') await exited;
    },
    async stop() {
      if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
  return redis;
}
