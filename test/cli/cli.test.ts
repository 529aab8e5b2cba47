import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { serverSettings } from '../../src/config.js';
import { ENGINES_AND_POOLER, sqlite, withFreshStore } from '../helpers/engines.js';
import { call, listPlants, postPlant } from '../helpers/http.js';
import { runCli, startServer } from '../helpers/server.js';

for (const engine of ENGINES_AND_POOLER) {
  describe(`plant-store token (${engine.name})`, { skip: engine.skip }, () => {
    describe('token create prints the token alone, or one JSON object with --json', () => {
      it('prints only the secret by default', async () => {
        await withFreshStore(engine, async (url) => {
          const created = runCli(['token', 'create', '--account', 'alice', '--database', url]);
          assert.equal(created.status, 0, created.stderr);
          assert.match(created.stdout, /^pst_[\w-]+\n$/);
        });
      });
      it('prints {id, account, scopes, expiresAt, token} with --json', async () => {
        await withFreshStore(engine, async (url) => {
          const created = runCli([
            'token',
            'create',
            '--account',
            'bob',
            '--scopes',
            'plants:read',
            '--expires',
            '30d',
            '--json',
            '--database',
            url,
          ]);
          assert.equal(created.status, 0, created.stderr);
          const json = JSON.parse(created.stdout) as Record<string, unknown>;
          assert.deepEqual(Object.keys(json).sort(), ['account', 'expiresAt', 'id', 'scopes', 'token']);
          assert.equal(json.account, 'bob');
          assert.deepEqual(json.scopes, ['plants:read']);
          const days = (Date.parse(json.expiresAt as string) - Date.now()) / 86_400_000;
          assert.ok(days > 29.9 && days <= 30, `expires in ${days} days`);
        });
      });
      it('refuses an unknown scope or a bad duration with exit status 2', async () => {
        await withFreshStore(engine, async (url) => {
          assert.equal(
            runCli(['token', 'create', '--account', 'a', '--scopes', 'plants:admin', '--database', url]).status,
            2,
          );
          assert.equal(runCli(['token', 'create', '--account', 'a', '--expires', 'soon', '--database', url]).status, 2);
          for (const json of [[], ['--json']]) {
            const tooLong = ['token', 'create', '--account', 'a', '--expires', '999999999w', ...json];
            assert.equal(runCli([...tooLong, '--database', url]).status, 2, 'a lifetime past any date is refused');
          }
          assert.equal(runCli(['token', 'create', '--database', url]).status, 2);
          assert.deepEqual(JSON.parse(runCli(['token', 'list', '--json', '--database', url]).stdout), []);
        });
      });
    });

    describe('token list shows id, account, scopes, creation and expiry, never a secret', () => {
      it('lists as a table and as JSON, filtered by account', async () => {
        await withFreshStore(engine, async (url) => {
          const alice = JSON.parse(
            runCli(['token', 'create', '--account', 'alice', '--json', '--database', url]).stdout,
          );
          runCli(['token', 'create', '--account', 'bob', '--database', url]);
          const all = JSON.parse(runCli(['token', 'list', '--json', '--database', url]).stdout) as Array<
            Record<string, unknown>
          >;
          assert.equal(all.length, 2);
          for (const row of all) {
            for (const key of ['id', 'account', 'scopes', 'createdAt', 'expiresAt']) assert.ok(key in row, key);
          }
          const onlyAlice = JSON.parse(
            runCli(['token', 'list', '--account', 'alice', '--json', '--database', url]).stdout,
          );
          assert.deepEqual(
            onlyAlice.map((r: { id: string }) => r.id),
            [alice.id],
          );
          const table = runCli(['token', 'list', '--database', url]).stdout;
          assert.match(table, new RegExp(alice.id));
          assert.doesNotMatch(table + JSON.stringify(all), /pst_/);
        });
      });
    });

    describe('token revoke takes the id; an unknown id, or a token already revoked, fails (exit 1)', () => {
      it('revokes and reports unknown ids', async () => {
        await withFreshStore(engine, async (url) => {
          const created = JSON.parse(runCli(['token', 'create', '--account', 'c', '--json', '--database', url]).stdout);
          assert.equal(runCli(['token', 'revoke', created.id, '--database', url]).status, 0);
          const [row] = JSON.parse(runCli(['token', 'list', '--json', '--database', url]).stdout);
          assert.ok(row.revokedAt);
          assert.equal(runCli(['token', 'revoke', 'tok_nope', '--database', url]).status, 1);
        });
      });
      it('says a token was already revoked, and when, keeping the first revocation', async () => {
        await withFreshStore(engine, async (url) => {
          const created = JSON.parse(runCli(['token', 'create', '--account', 'd', '--json', '--database', url]).stdout);
          const first = runCli(['token', 'revoke', created.id, '--database', url]);
          assert.equal(first.status, 0, first.stderr);
          assert.equal(first.stdout, `revoked ${created.id}\n`);
          const [row] = JSON.parse(runCli(['token', 'list', '--json', '--database', url]).stdout);
          const again = runCli(['token', 'revoke', created.id, '--database', url]);
          assert.equal(again.status, 1);
          assert.equal(again.stdout, '');
          assert.equal(again.stderr, `plant-store: token ${created.id} was already revoked, at ${row.revokedAt}\n`);
          const [after] = JSON.parse(runCli(['token', 'list', '--json', '--database', url]).stdout);
          assert.equal(after.revokedAt, row.revokedAt);
        });
      });
    });

    describe('first start on an empty store creates and prints one token for account default', () => {
      it('prints a working token once, and none on the next start; plants survive the restart', async () => {
        await withFreshStore(engine, async (url) => {
          const first = await startServer({ database: url });
          assert.ok(first.firstToken, first.output());
          const token = first.firstToken!;
          // A plain banner on standard error, with the port really listened on (--port 0 here);
          // the JSON log stream on standard output says a token was made, never what it is.
          assert.ok(first.stderr().includes(`curl -H "Authorization: Bearer ${token}" ${first.url}/plants`));
          assert.ok(!first.stdout().includes(token));
          assert.match(first.stdout(), /"msg":"first start: created an API token for account \\"default\\"/);
          assert.equal(
            (await postPlant(first.url, token, '{"id": 9007199254740993, "name": "kept", "tag": "t"}')).status,
            200,
          );
          assert.equal(await first.stop(), 0);
          const second = await startServer({ database: url });
          try {
            assert.equal(second.firstToken, null);
            assert.doesNotMatch(second.output(), /pst_/);
            assert.deepEqual((await listPlants(second.url, token)).json, [{ name: 'kept', tag: 't' }]);
          } finally {
            await second.stop();
          }
          const [row] = JSON.parse(runCli(['token', 'list', '--json', '--database', url]).stdout);
          assert.equal(row.account, 'default');
        });
      });
    });
  });
}

describe('an unknown command', () => {
  it('is named, with the commands there are, and exits 2', () => {
    const result = runCli(['bogus']);
    assert.equal(result.status, 2);
    assert.equal(result.stdout, '');
    assert.match(
      result.stderr,
      /^plant-store: error: unknown command 'bogus'; the commands are serve \(the default\), token, copy, backup, help/,
    );
    assert.equal(result.stderr.trim().split('\n').length, 1);
  });
});

describe('plant-store serve settings', () => {
  describe('--help lists every setting', () => {
    it('names each flag and environment variable', () => {
      const help = runCli(['serve', '--help']);
      assert.equal(help.status, 0);
      for (const word of [
        '--port',
        'PORT',
        '--host',
        '--database',
        'DATABASE_URL',
        '--rate-limit',
        'RATE_LIMIT',
        '--workers',
        '--jwt-jwks-url',
        '--jwt-public-key',
        '--jwt-issuer',
        '--jwt-audience',
        '--jwt-account-claim',
      ]) {
        assert.ok(help.stdout.includes(word), word);
      }
      const rootHelp = runCli(['--help']);
      assert.equal(rootHelp.status, 0);
      for (const spec of Object.values(serverSettings)) {
        assert.ok(rootHelp.stdout.includes(spec.flag.split(' ')[0]!), spec.flag);
        assert.ok(rootHelp.stdout.includes(spec.env), spec.env);
      }
    });
    it('the settings table of docs/operating.md documents each of them', () => {
      const manual = readFileSync(new URL('../../docs/operating.md', import.meta.url), 'utf8');
      for (const spec of Object.values(serverSettings)) {
        assert.ok(manual.includes(`\`${spec.flag}\``), `docs/operating.md lacks ${spec.flag}`);
        assert.ok(manual.includes(`\`${spec.env}\``), `docs/operating.md lacks ${spec.env}`);
      }
    });
  });

  describe('a bad setting is refused at start with a one-line reason and exit status 2', () => {
    // The reason names the setting whenever it comes from one flag or variable.
    const bad: Array<[string, string[], Record<string, string>, RegExp?]> = [
      ['a port that is not a number', ['--port', 'abc'], {}],
      ['a port out of range', ['--port', '70000'], {}],
      ['PORT from the environment', [], { PORT: 'eighty' }],
      ['an unknown database scheme', ['--database', 'mysql://x'], {}],
      ['a negative rate limit', ['--rate-limit', '-1'], {}],
      ['zero workers', ['--workers', '0'], {}],
      ['JWTs without an audience', ['--jwt-jwks-url', 'http://127.0.0.1:1/jwks'], {}],
      ['a missing public key file', ['--jwt-public-key', '/nonexistent.pem', '--jwt-audience', 'a'], {}],
      [
        'an unknown flag, with the one it resembles',
        ['--prot', '80'],
        {},
        /unknown option '--prot' \(did you mean --port\?\)/,
      ],
      ['a trusted proxy that is not an address', ['--trust-proxy', '999.1.1.1/8'], {}, /--trust-proxy/],
      ['a trusted proxy address of three parts', ['--trust-proxy', '10.0.0.1,1.2.3'], {}, /--trust-proxy.*"1\.2\.3"/],
      ['a trusted proxy CIDR too wide', [], { TRUST_PROXY: '10.0.0.0/33' }, /TRUST_PROXY/],
      ['a negative auth failure limit', ['--auth-failure-limit', '-1'], {}, /--auth-failure-limit/],
      ['a webhook timeout that is not a duration', ['--webhook-timeout', 'soon'], {}],
      ['a webhook timeout over 5 minutes', ['--webhook-timeout', '10m'], {}],
      ['a webhook retry schedule with an empty step', ['--webhook-retry-schedule', '1s,,2s'], {}],
      ['WEBHOOK_RETRY_SCHEDULE from the environment', [], { WEBHOOK_RETRY_SCHEDULE: '5 seconds' }],
      ['zero webhook concurrency', ['--webhook-concurrency', '0'], {}],
      ['a webhook retention that is not a duration', ['--webhook-retention', '7 days'], {}],
      ['WEBHOOK_ALLOW_PRIVATE that is not on or off', [], { WEBHOOK_ALLOW_PRIVATE: 'maybe' }],
    ];
    for (const [what, args, env, names] of bad) {
      it(what, async () => {
        await withFreshStore(sqlite, async (url) => {
          // A later --database in args wins over this one.
          const result = runCli(['serve', '--database', url, ...args], env);
          assert.equal(result.status, 2, result.stdout + result.stderr);
          assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
          if (names) assert.match(result.stderr, names);
        });
      });
    }
    it('accepts trusted proxies as IPv4 and IPv6 addresses and CIDRs', async () => {
      await withFreshStore(sqlite, async (url) => {
        const server = await startServer({
          database: url,
          args: ['--trust-proxy', '10.0.0.0/8, 192.0.2.7,::1,fd00::/8'],
        });
        assert.equal(await server.stop(), 0);
      });
    });
    it('an address it cannot listen on (port in use)', async () => {
      await withFreshStore(sqlite, async (url) => {
        const running = await startServer({ database: url });
        try {
          const port = new URL(running.url).port;
          const result = runCli(['serve', '--database', url, '--port', port]);
          assert.equal(result.status, 2, result.stderr);
          assert.match(result.stderr.trim(), /^plant-store: error: cannot listen.*EADDRINUSE[^\n]*$/);
        } finally {
          await running.stop();
        }
      });
    });
    it('WEBHOOK_ALLOW_PRIVATE=1 lets webhooks reach local http receivers; 0 keeps the guard on', async () => {
      for (const [value, status] of [
        ['1', 201],
        ['0', 400],
      ] as const) {
        await withFreshStore(sqlite, async (url) => {
          const server = await startServer({ database: url, env: { WEBHOOK_ALLOW_PRIVATE: value } });
          try {
            const reply = await call(`${server.url}/webhooks`, {
              method: 'POST',
              token: server.firstToken!,
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ url: 'http://127.0.0.1:9/hook' }),
            });
            assert.equal(reply.status, status, `WEBHOOK_ALLOW_PRIVATE=${value}: ${reply.text}`);
            if (status === 201) assert.equal((reply.json as { url: string }).url, 'http://127.0.0.1:9/hook');
            else assert.match((reply.json as { message: string }).message, /\burl\b/);
          } finally {
            await server.stop();
          }
        });
      }
    });
    it('flags win over environment variables', async () => {
      await withFreshStore(sqlite, async (url) => {
        const server = await startServer({ database: url, env: { PORT: 'not-a-port' } });
        await server.stop();
      });
    });
  });
});
