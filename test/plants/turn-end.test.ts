import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { turnEnd } from '../../src/plants/turn-end.js';

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
