import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { exactNumber } from '../../src/http/intake.js';

describe('a JSON number is read by its exact value', () => {
  it('reads an integer value in any form as that integer, a BigInt beyond ±2^53', () => {
    for (const [literal, value] of [
      ['0', 0],
      ['-0', 0],
      ['12', 12],
      ['1e2', 100],
      ['1.50e1', 15],
      ['0.001e3', 1],
      ['9007199254740991', 9007199254740991],
      ['9007199254740993', 9007199254740993n],
      ['9.007199254740993e15', 9007199254740993n],
      ['-92233720368547758080e-1', -9223372036854775808n],
    ] as const) {
      assert.equal(exactNumber(literal), value, literal);
    }
  });

  it('never turns a fraction into an integer, however small or close', () => {
    for (const literal of ['1e-400', '-1e-400', '1.0000000000000000001', '15e-1', '1e-99999999999', '0.5']) {
      const value = exactNumber(literal);
      assert.ok(typeof value === 'number' && !Number.isInteger(value), `${literal} -> ${String(value)}`);
    }
  });

  it('reads an integer of more digits than any id as ±Infinity, without building it', () => {
    assert.equal(exactNumber('1e99999999999'), Infinity);
    assert.equal(exactNumber('-1e1001'), -Infinity);
    assert.equal(exactNumber('1e400'), 10n ** 400n);
  });
});
