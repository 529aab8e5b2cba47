import assert from 'node:assert/strict';
import { get, type IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ENGINES } from '../helpers/engines.js';
import { listPlants, postPlant } from '../helpers/http.js';
import { startServer } from '../helpers/server.js';

interface Sent {
  id: number;
  sentAt: number;
  status: number | 'failed';
  error?: string;
}

for (const engine of ENGINES) {
  describe(`SIGTERM: stop accepting, finish in-flight requests, exit 0 (${engine.name})`, () => {
    it('answers every request sent before the signal, and keeps every acknowledged plant', async () => {
      const { url: database, drop } = await engine.fresh();
      try {
        const server = await startServer({ database });
        const token = server.firstToken!;
        const sent: Sent[] = [];
        let nextId = 0;
        let stop = false;
        const client = async () => {
          while (!stop) {
            const record: Sent = { id: nextId++, sentAt: Date.now(), status: 'failed' };
            sent.push(record);
            try {
              record.status = (await postPlant(server.url, token, { id: record.id, name: `p${record.id}` })).status;
            } catch (error) {
              record.error = String((error as Error).cause ?? error);
              return;
            }
          }
        };
        const clients = Array.from({ length: 16 }, client);
        // Signal once the stream is well under way, however slow the machine is today.
        const started = Date.now();
        while (sent.filter((r) => r.status === 200).length < 100 && Date.now() - started < 15_000) await sleep(20);
        const signalAt = Date.now();
        const exit = server.stop('SIGTERM');
        await sleep(300);
        stop = true;
        await Promise.all(clients);
        assert.equal(await exit, 0);

        // fetch() is called a little before its bytes leave a busy test process: a 50 ms margin.
        const beforeSignal = sent.filter((r) => r.sentAt < signalAt - 50);
        assert.ok(beforeSignal.length > 50, `only ${beforeSignal.length} requests before the signal`);
        assert.deepEqual(
          beforeSignal.filter((r) => r.status !== 200),
          [],
        );

        const restarted = await startServer({ database });
        try {
          const stored = new Set(
            ((await listPlants(restarted.url, token)).json as Array<{ name: string }>).map((p) => p.name),
          );
          for (const r of sent.filter((r) => r.status === 200)) assert.ok(stored.has(`p${r.id}`), `p${r.id} lost`);
        } finally {
          await restarted.stop();
        }
      } finally {
        await drop();
      }
    });
  });
}

function getOnce(url: string, headers: Record<string, string>): Promise<IncomingMessage> {
  return new Promise((resolve, reject) =>
    get(url, { headers, agent: false }, (response) => response.resume().on('end', () => resolve(response))).on(
      'error',
      reject,
    ),
  );
}

describe('SIGTERM: every log line is written before the process exits', () => {
  it('writes the request lines and the stopping line, though lines are buffered', async () => {
    const { url: database, drop } = await ENGINES[0]!.fresh();
    try {
      const server = await startServer({ database });
      // Connection: close, so nothing holds the server open and it exits well within the 100 ms
      // after which buffered lines would be written anyway.
      const headers = { authorization: `Bearer ${server.firstToken}`, connection: 'close' };
      for (let i = 0; i < 3; i++) assert.equal((await getOnce(`${server.url}/plants`, headers)).statusCode, 200);
      assert.equal(await server.stop('SIGTERM'), 0);
      const lines = server.output().split('\n');
      assert.equal(lines.filter((line) => line.includes('"msg":"request"')).length, 3, server.output());
      assert.ok(
        lines.some((line) => line.includes('stopping: finishing in-flight requests')),
        server.output(),
      );
    } finally {
      await drop();
    }
  });
});
