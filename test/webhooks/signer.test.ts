import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { newSecret, signatureHeader, signingSecrets } from '../../src/webhooks/signer.js';

/** The webhook signature as Standard Webhooks defines it, and which secrets sign during a rotation. */

describe('signatureHeader: Standard Webhooks v1 signatures', () => {
  it("matches the standard's published example", () => {
    // The example of standardwebhooks.com's specification and libraries.
    const header = signatureHeader(
      ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      1614265330,
      '{"test": 2432232314}',
    );
    assert.equal(header, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('signs once per secret, space-separated, in the order given', () => {
    const [a, b] = [newSecret(), newSecret()];
    const one = (secret: string) => signatureHeader([secret], 'msg_1', 1700000000, '{"id":1}');
    assert.equal(signatureHeader([a, b], 'msg_1', 1700000000, '{"id":1}'), `${one(a)} ${one(b)}`);
  });

  it('covers the id, the timestamp and the body: a change to any one changes the signature', () => {
    const secret = newSecret();
    const base = signatureHeader([secret], 'msg_1', 1700000000, '{"id":1}');
    assert.notEqual(signatureHeader([secret], 'msg_2', 1700000000, '{"id":1}'), base);
    assert.notEqual(signatureHeader([secret], 'msg_1', 1700000001, '{"id":1}'), base);
    assert.notEqual(signatureHeader([secret], 'msg_1', 1700000000, '{"id":2}'), base);
  });
});

describe('newSecret: whsec_ and 32 random bytes, keyed by what its base64 decodes to', () => {
  it('is new each time and decodes to 32 bytes', () => {
    const secrets = new Set(Array.from({ length: 100 }, newSecret));
    assert.equal(secrets.size, 100);
    for (const secret of secrets) {
      assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
      assert.equal(Buffer.from(secret.slice('whsec_'.length), 'base64').length, 32);
    }
  });

  it('keys the HMAC with the decoded bytes, not the text', () => {
    const secret = newSecret();
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const expected = createHmac('sha256', key).update('msg_1.1700000000.{}').digest('base64');
    assert.equal(signatureHeader([secret], 'msg_1', 1700000000, '{}'), `v1,${expected}`);
  });
});

describe('signingSecrets: the replaced secret signs too until its overlap ends', () => {
  const now = new Date('2026-01-01T00:00:00Z');
  const later = new Date(now.getTime() + 1);

  it('is the current secret alone when none was replaced', () => {
    assert.deepEqual(signingSecrets({ secret: 'new', previousSecret: null, previousSecretUntil: null }, now), ['new']);
  });

  it('adds the previous secret while its overlap lasts, the current one first', () => {
    const secrets = { secret: 'new', previousSecret: 'old', previousSecretUntil: later };
    assert.deepEqual(signingSecrets(secrets, now), ['new', 'old']);
  });

  it('drops the previous secret from the moment its overlap ends', () => {
    const secrets = { secret: 'new', previousSecret: 'old', previousSecretUntil: now };
    assert.deepEqual(signingSecrets(secrets, now), ['new']);
  });
});
