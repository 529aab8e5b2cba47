import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sharedSerializers } from '../../src/http/shared-serializers.js';

const ErrorBody = {
  $id: 'Error',
  type: 'object',
  properties: { error: { type: 'integer' }, message: { type: 'string' } },
  required: ['error', 'message'],
};
const compile = () => sharedSerializers({ Error: ErrorBody }, {});
const route = (schema: object) => ({ schema, method: 'GET', url: '/x', httpStatus: '200' });

describe('response serializers are compiled once per body, not once per route and status', () => {
  it('shares one serializer between responses that differ only in description, examples or headers', () => {
    const serializerOf = compile();
    const first = serializerOf(route({ description: 'Bad request.', $ref: 'Error#' }));
    const second = serializerOf(route({ description: 'Not found.', examples: [{ error: 404 }], $ref: 'Error#' }));
    assert.equal(first, second);
    assert.equal(first({ error: 404, message: 'no such plant', extra: 1 }), '{"error":404,"message":"no such plant"}');
  });

  it('keeps a serializer of its own for every other body, even one with a property named description', () => {
    const serializerOf = compile();
    const withoutIt = serializerOf(route({ type: 'object', properties: { id: { type: 'string' } } }));
    const withIt = serializerOf(
      route({ type: 'object', properties: { id: { type: 'string' }, description: { type: 'string' } } }),
    );
    assert.notEqual(withoutIt, withIt);
    assert.equal(withIt({ id: 'a', description: 'kept' }), '{"id":"a","description":"kept"}');
    assert.equal(withoutIt({ id: 'a', description: 'dropped' }), '{"id":"a"}');
  });
});
