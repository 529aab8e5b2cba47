import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { turnEnd, VersionPerTurn } from '../../src/plants/batched-reads.js';

describe('reads by id wait for the end of the turn that received them', () => {
  it('gives every caller of one turn the same wait, over only when the turn is', async () => {
    const events: string[] = [];
    const first = turnEnd();
    assert.equal(turnEnd(), first, 'one wait for the whole turn');
    setImmediate(() => events.push('immediate queued after the wait'));
    void first.then(() => events.push('wait over'));
    await Promise.resolve();
    assert.deepEqual(events, [], 'not over while the turn still runs');
    await first;
    assert.deepEqual(events, ['wait over']);
  });

  it('gives a later turn a wait of its own', async () => {
    const earlier = turnEnd();
    await earlier;
    assert.notEqual(turnEnd(), earlier);
  });
});

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('the store version is read once per turn of the event loop, after the turn', () => {
  it('reads once for every page asked in one turn, and not before the turn is over', async () => {
    let reads = 0;
    const versions = new VersionPerTurn(() => ++reads);
    const asked = [versions.next(), versions.next(), versions.next()];
    assert.equal(reads, 0, 'not read while the turn still runs');
    assert.deepEqual(await Promise.all(asked), [1, 1, 1]);
    assert.equal(reads, 1);
  });

  it('reads again for pages asked in a later turn, so a commit in between is seen', async () => {
    let version = 7;
    const versions = new VersionPerTurn(() => version);
    assert.equal(await versions.next(), 7);
    version = 8;
    await nextTurn();
    assert.equal(await versions.next(), 8);
  });

  it('hands a failed read to every page that waited for it, and reads afresh next time', async () => {
    let fail = true;
    const versions = new VersionPerTurn(() => {
      if (fail) throw new Error('store closed');
      return 1;
    });
    const asked = [versions.next(), versions.next()];
    for (const page of asked) await assert.rejects(page, /store closed/);
    fail = false;
    assert.equal(await versions.next(), 1);
  });
});
