import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openStorage } from '../../src/storage/open.js';
import { ENGINES } from '../helpers/engines.js';
import { postPlant } from '../helpers/http.js';
import { isErrorBody, realServer } from '../helpers/suite.js';
import { createWebhook, deliveries, patchWebhook, Receiver, registerEndpoint } from '../helpers/webhooks.js';
import { eventually } from '../helpers/wait.js';

/** Without --webhook-allow-private, as in production. */
for (const engine of ENGINES) {
  describe(`the SSRF guard (${engine.name})`, () => {
    const s = realServer(engine, ['--webhook-retry-schedule', '1s', '--webhook-timeout', '2s']);

    describe('registration refuses URLs that are not https or reach non-public addresses: 400 naming url', () => {
      const refused = [
        'https://127.0.0.1/hook',
        'https://127.1.2.3/hook',
        'https://2130706433/hook',
        'https://10.1.2.3/hook',
        'https://172.16.0.1/hook',
        'https://192.168.1.1/hook',
        'https://169.254.169.254/latest/meta-data/',
        'https://100.64.0.1/hook',
        'https://0.0.0.0/hook',
        'https://224.0.0.1/hook',
        'https://255.255.255.255/hook',
        'https://[::1]/hook',
        'https://[::]/hook',
        'https://[::ffff:127.0.0.1]/hook',
        'https://[::ffff:a9fe:a9fe]/hook',
        'https://[::ffff:10.0.0.1]/hook',
        'https://[fe80::1]/hook',
        'https://[fd00::1]/hook',
        'https://[ff02::1]/hook',
        'https://[64:ff9b::7f00:1]/hook',
        'https://[2002:7f00:1::]/hook',
        'https://localhost/hook',
        'http://93.184.215.14/hook',
        'https://user:secret@93.184.215.14/hook',
        `https://93.184.215.14/${'a'.repeat(2030)}`,
      ];
      for (const url of refused) {
        it(url.length > 100 ? `a URL of ${url.length} characters` : url, async () => {
          const reply = await createWebhook(s.url, s.token, { url });
          assert.equal(reply.status, 400, reply.text);
          assert.ok(isErrorBody(reply));
          assert.match((reply.json as { message: string }).message, /^url /);
        });
      }
      it('names --webhook-allow-private, the flag that lifts the rule, when it refuses http or an address', async () => {
        for (const url of ['http://93.184.215.14/hook', 'https://127.0.0.1:3000/hook', 'https://localhost/hook']) {
          const reply = await createWebhook(s.url, s.token, { url });
          assert.equal(reply.status, 400, reply.text);
          assert.match((reply.json as { message: string }).message, /--webhook-allow-private/, url);
        }
      });
      it('accepts https to a public address, IPv4 or IPv6', async () => {
        for (const url of ['https://93.184.215.14/hook', 'https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/hook']) {
          const reply = await createWebhook(s.url, s.token, { url });
          assert.equal(reply.status, 201, `${url}: ${reply.text}`);
        }
      });
      it('checks a new URL given by PATCH the same way', async () => {
        const endpoint = await registerEndpoint(s.url, s.token, { url: 'https://93.184.215.14/hook' });
        const reply = await patchWebhook(s.url, s.token, endpoint.id, { url: 'https://169.254.169.254/' });
        assert.equal(reply.status, 400);
        assert.match((reply.json as { message: string }).message, /^url /);
      });
    });

    describe('each attempt checks the address it connects to (a name that later resolves privately is refused), logged once per endpoint and reason', () => {
      it('never connects to a stored URL whose host now resolves to loopback, nor to a loopback literal', async () => {
        const receiver = await Receiver.start();
        // What DNS rebinding would leave behind: a registered URL whose name now points inside.
        // Registration refuses these, so they go into the store directly.
        const storage = await openStorage(s.database);
        const ids = ['ep_rebound_name', 'ep_rebound_literal'];
        try {
          for (const [i, host] of ['localhost', '127.0.0.1'].entries()) {
            await storage.createEndpoint(
              {
                account: 'default',
                id: ids[i]!,
                url: `https://${host}:${receiver.port}/hook`,
                events: ['plant.created'],
                description: '',
                enabled: true,
                createdAt: new Date(),
                secret: 'whsec_' + Buffer.alloc(32, 7).toString('base64'),
              },
              16,
            );
          }
        } finally {
          await storage.close();
        }
        try {
          assert.equal((await postPlant(s.url, s.token, { id: 1, name: 'inside job' })).status, 200);
          for (const id of ids) {
            const [view] = await eventually(`an attempt for ${id}`, async () => {
              const list = await deliveries(s.url, s.token, id);
              return list[0]?.attempts ? list : undefined;
            });
            assert.match(
              view!.lastError ?? '',
              /address not allowed: 127\.0\.0\.1 is not a public address \(loopback\)/,
            );
            assert.equal(view!.lastStatus, null);
          }
          assert.equal(receiver.connections, 0, 'no connection reached the receiver');
          // Both attempts of each event failed the same way (retry schedule 1s): one warning per endpoint.
          for (const id of ids) {
            await eventually(`${id} failed after its retry`, async () => {
              const list = await deliveries(s.url, s.token, id);
              return list[0]?.state === 'failed' ? list : undefined;
            });
          }
          const warnings = () =>
            s
              .server!.stdout()
              .split('\n')
              .filter((line) => line.includes('its address is not allowed'))
              .map((line) => JSON.parse(line) as { level: number; endpointId: string; reason: string });
          await eventually('the warnings in the log', async () => (warnings().length >= 2 ? true : undefined));
          await new Promise((resolve) => setTimeout(resolve, 300)); // the log is written every 100 ms
          assert.deepEqual(
            warnings()
              .map((w) => w.endpointId)
              .sort(),
            [...ids].sort(),
          );
          for (const warning of warnings()) {
            assert.equal(warning.level, 40);
            assert.match(warning.reason, /127\.0\.0\.1 is not a public address \(loopback\)/);
          }
        } finally {
          await receiver.close();
        }
      });
    });
  });
}
