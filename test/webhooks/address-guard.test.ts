import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { describe, it } from 'node:test';
import type { HttpError } from '../../src/errors.js';
import { AddressGuard, type Resolver } from '../../src/webhooks/address-guard.js';

/** The guard's classification and its lookup, with a resolver the test controls (no network). */

function resolverOf(answers: Record<string, string[][]>): Resolver {
  const calls: Record<string, number> = {};
  return (hostname, callback) => {
    const n = (calls[hostname] = (calls[hostname] ?? -1) + 1);
    const sequence = answers[hostname];
    if (!sequence) return callback(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }), []);
    const addresses = sequence[Math.min(n, sequence.length - 1)]!;
    callback(
      null,
      addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };
}

function lookup(guard: AddressGuard, hostname: string, all: boolean): Promise<unknown> {
  return new Promise((resolve, reject) =>
    guard.lookup(hostname, { all }, (error, address) => (error ? reject(error) : resolve(address))),
  );
}

describe('AddressGuard: only global unicast addresses, IPv4, IPv6, IPv4-mapped and IPv4-compatible', () => {
  const guard = new AddressGuard(false);
  it('refuses every non-public class', () => {
    for (const address of [
      '127.0.0.1',
      '10.0.0.1',
      '172.31.255.255',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.251',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:169.254.169.254',
      '::127.0.0.1',
      '::7f00:1',
      '::a00:1',
      '::a9fe:a9fe',
      '64:ff9b::a00:1',
      '2002:a00:1::',
    ]) {
      assert.notEqual(guard.refusal(address), null, address);
    }
  });
  it('allows public addresses, including a mapped public IPv4', () => {
    for (const address of ['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      assert.equal(guard.refusal(address), null, address);
    }
  });
  it('allows everything with allowPrivate (development and tests)', () => {
    assert.equal(new AddressGuard(true).refusal('127.0.0.1'), null);
  });
});

describe('AddressGuard.lookup checks what the connection will use (DNS rebinding)', () => {
  it('passes a public answer and refuses the same name once it resolves to a private address', async () => {
    const guard = new AddressGuard(false, resolverOf({ 'rebind.test': [['93.184.215.14'], ['127.0.0.1']] }));
    await guard.checkUrl('https://rebind.test/hook');
    await assert.rejects(lookup(guard, 'rebind.test', false), /address not allowed: 127\.0\.0\.1/);
  });
  it('refuses a name with any private address among its answers', async () => {
    const guard = new AddressGuard(false, resolverOf({ 'mixed.test': [['93.184.215.14', '10.0.0.1']] }));
    await assert.rejects(guard.checkUrl('https://mixed.test/'), /url is not allowed/);
    await assert.rejects(lookup(guard, 'mixed.test', true), /10\.0\.0\.1/);
  });
  it('answers in both lookup forms', async () => {
    const guard = new AddressGuard(false, resolverOf({ 'ok.test': [['93.184.215.14', '2606:4700:4700::1111']] }));
    assert.equal(await lookup(guard, 'ok.test', false), '93.184.215.14');
    assert.deepEqual(await lookup(guard, 'ok.test', true), [
      { address: '93.184.215.14', family: 4 },
      { address: '2606:4700:4700::1111', family: 6 },
    ]);
  });
  it('refuses at registration a name that does not resolve', async () => {
    const guard = new AddressGuard(false, resolverOf({}));
    await assert.rejects(guard.checkUrl('https://nowhere.test/'), /url is not allowed/);
  });
});

describe('AddressGuard.checkUrl: a refusal names the rule, never what a name resolves to', () => {
  it('answers an internal name, a private literal and a name that does not resolve alike, and logs why', async () => {
    const guard = new AddressGuard(false, resolverOf({ vm: [['127.0.0.1']], 'db.internal': [['10.1.2.3']] }));
    const refusals = await Promise.all(
      ['https://vm/', 'https://db.internal/', 'https://10.1.2.3/', 'https://nowhere.test/'].map((url) =>
        guard.checkUrl(url).then(
          () => assert.fail(`${url} was accepted`),
          (error: HttpError) => error,
        ),
      ),
    );
    for (const refusal of refusals) {
      assert.equal(refusal.statusCode, 400);
      assert.equal(refusal.message, refusals[0]!.message);
    }
    assert.doesNotMatch(
      refusals[0]!.message,
      /127\.0\.0\.1|10\.1\.2\.3|loopback|\bvm\b|db\.internal|nowhere|cannot be resolved/,
    );
    assert.match(refusals[0]!.logReason ?? '', /vm: 127\.0\.0\.1 is not a public address \(loopback\)/);
    assert.match(refusals[3]!.logReason ?? '', /nowhere\.test: it cannot be resolved/);
  });
});
