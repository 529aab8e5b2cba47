import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EndpointPaces } from '../../src/webhooks/endpoint-pace.js';
import { endpointKey } from '../../src/storage/webhook-rows.js';
import { DeliveryShares } from '../../src/webhooks/fair-share.js';

const key = endpointKey('acct', 'ep_1');

describe("an endpoint's window of attempts in flight (AIMD)", () => {
  it('grows by about one per window of quick answers, up to the cap', () => {
    const paces = new EndpointPaces(16);
    assert.equal(paces.limit(key), 4, 'an endpoint never seen starts at 4');
    for (let i = 0; i < 4; i++) paces.answered('acct', 'ep_1', true);
    assert.equal(paces.limit(key), 4, 'four quick answers add about one (3.9...)');
    paces.answered('acct', 'ep_1', true);
    assert.equal(paces.limit(key), 5);
    for (let i = 0; i < 200; i++) paces.answered('acct', 'ep_1', true);
    assert.equal(paces.limit(key), 16, 'never past the cap');
  });

  it('halves at each failed or slow answer, down to one', () => {
    const paces = new EndpointPaces(16);
    for (let i = 0; i < 200; i++) paces.answered('acct', 'ep_1', true);
    paces.answered('acct', 'ep_1', false);
    assert.equal(paces.limit(key), 8);
    for (let i = 0; i < 10; i++) paces.answered('acct', 'ep_1', false);
    assert.equal(paces.limit(key), 1);
  });

  it('starts below a cap smaller than the initial window', () => {
    assert.equal(new EndpointPaces(2).limit(key), 2);
  });
});

describe('the shares a claim keeps to', () => {
  it("gives an account a quarter of the slots, whatever its endpoints' windows", () => {
    const shares = new DeliveryShares(64, new EndpointPaces(16));
    for (let i = 0; i < 16; i++) shares.take('bob', `ep_${i % 8}`);
    const share = shares.claimShare(48);
    assert.equal(share.perAccount, 16);
    assert.deepEqual(share.accounts, [{ account: 'bob', room: 0 }], 'bob has no room left');
    assert.ok(
      share.endpoints.every((e) => e.account === 'bob' && e.room === 2),
      'each of his endpoints has 2 of its 4 in flight',
    );
  });

  it('gives the room back when an attempt ends, once', () => {
    const shares = new DeliveryShares(8, new EndpointPaces(16));
    const release = shares.take('alice', 'ep_a');
    shares.take('alice', 'ep_a');
    assert.deepEqual(shares.claimShare(6).accounts, [{ account: 'alice', room: 0 }]);
    release();
    release();
    assert.deepEqual(shares.claimShare(7).accounts, [{ account: 'alice', room: 1 }]);
  });

  it('lists an endpoint whose window shrank, with that window as its room', () => {
    const paces = new EndpointPaces(16);
    const shares = new DeliveryShares(64, paces);
    for (let i = 0; i < 3; i++) paces.answered('acct', 'ep_1', false);
    assert.deepEqual(shares.claimShare(64).endpoints, [{ account: 'acct', endpointId: 'ep_1', room: 1 }]);
  });
});
