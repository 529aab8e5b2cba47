import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import { ENGINES } from '../helpers/engines.js';
import { realServer } from '../helpers/suite.js';
import { scaled } from '../helpers/load.js';
import { assertErrorBody, parseResponses } from '../helpers/raw-http.js';

/** A method llhttp does not know: the parser rejects the request before Fastify sees it. */
const BAD = 'FOO /plants HTTP/1.1\r\nHost: x\r\n\r\n';
const CONNECTIONS = 48;
const ROUNDS = scaled(6, 40);

interface Exchange {
  first: string;
  pipelined: boolean;
}

/**
 * One keep-alive connection: a valid request, then the bad one, either in the same write
 * (pipelined) or as soon as the first bytes of the first answer arrive (so the answer may still
 * be on its way). Resolves with everything the server sent until it closed.
 */
function exchange(port: number, { first, pipelined }: Exchange): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within 20 s after ${JSON.stringify(Buffer.concat(chunks).toString('latin1'))}`));
    }, 20_000);
    socket.on('connect', () => socket.write(pipelined ? first + BAD : first));
    socket.on('data', (chunk) => {
      if (!pipelined && chunks.length === 0) socket.write(BAD);
      chunks.push(chunk);
    });
    socket.on('error', () => {}); // a reset shows as a missing answer below
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
  });
}

for (const engine of ENGINES) {
  describe(`a keep-alive request the HTTP parser rejects after a valid one gets the Error body 400 (${engine.name})`, () => {
    const s = realServer(engine);
    const name = 'n'.repeat(256);

    const firsts = () => [
      // Answered before its body is read (no token): the body then completes, and the bad request follows.
      `POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n{"id": 1, "name": "a", "x": 1}`,
      `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n{"id": 7, "name": "a", "x": 1}`,
      `GET /plants?limit=1000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\n\r\n`,
      'GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
    ];

    it(`answers the first request, then 400, on ${CONNECTIONS} connections at once, ${ROUNDS} rounds, pipelined and not`, async () => {
      // Large pages, so some answers are still being written when the bad request arrives.
      for (let id = 1000; id < 1300; id++) {
        const body = JSON.stringify({ id, name });
        const reply = await fetch(`${s.url}/plants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
          body,
        });
        assert.equal(reply.status, 200);
      }
      const port = Number(new URL(s.url).port);
      const failures: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        await Promise.all(
          Array.from({ length: CONNECTIONS }, async (_, lane) => {
            const first = firsts()[lane % firsts().length]!;
            const pipelined = (lane + round) % 2 === 0;
            const raw = await exchange(port, { first, pipelined });
            const what = `${first.split('\r\n')[0]} (${pipelined ? 'pipelined' : 'after the first answer began'})`;
            let responses: ReturnType<typeof parseResponses>;
            try {
              responses = parseResponses(raw);
            } catch (error) {
              failures.push(`${what}: ${(error as Error).message}`);
              return;
            }
            if (responses.length !== 2 || responses[1]!.status !== 400) {
              failures.push(`${what}: statuses ${JSON.stringify(responses.map((r) => r.status))}`);
              return;
            }
            const refusal = responses[1]!;
            assertErrorBody(400, refusal.headers['content-type'], refusal.body.toString('utf8'), what);
          }),
        );
      }
      assert.deepEqual(failures.slice(0, 10), [], `${failures.length} of ${ROUNDS * CONNECTIONS} exchanges`);
    });
  });
}
