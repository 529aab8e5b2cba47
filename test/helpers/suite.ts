import { after, before } from 'node:test';
import type { Engine } from './engines.js';
import { startServer, type RunningServer } from './server.js';

/**
 * One real server on a fresh store of `engine` for the enclosing describe; started before its
 * tests and stopped (store dropped) after them.
 */
export function realServer(engine: Engine, args: string[] = []) {
  const context = { url: '', token: '', database: '', server: undefined as RunningServer | undefined };
  let drop = async () => {};
  before(async () => {
    const store = await engine.fresh();
    drop = store.drop;
    context.database = store.url;
    context.server = await startServer({ database: store.url, args });
    context.url = context.server.url;
    context.token = context.server.firstToken ?? '';
  });
  after(async () => {
    await context.server?.stop();
    await drop();
  });
  return context;
}

/** Asserts the one Error body: `{"error": status, "message": string}` as application/json. */
export function isErrorBody(reply: { status: number; headers: Headers; json: unknown }): boolean {
  const body = reply.json as { error?: unknown; message?: unknown } | undefined;
  return (
    (reply.headers.get('content-type') ?? '').startsWith('application/json') &&
    body !== undefined &&
    body.error === reply.status &&
    typeof body.message === 'string' &&
    body.message.length > 0 &&
    Object.keys(body).length === 2
  );
}
