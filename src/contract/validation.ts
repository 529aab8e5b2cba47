import type { FastifySchemaCompiler } from 'fastify';
import { FEED_INPUTS, FeedHeaders } from '../feed/schemas.js';
import { compileInput } from '../http/schema-check.js';
import { PLANT_INPUTS } from '../plants/validate.js';
import { ListHeaders } from '../plants/list-query.js';
import { IfMatchHeaders, IfNoneMatchHeaders, sharedSchemas } from '../schemas.js';
import { WEBHOOK_INPUTS } from '../webhooks/validate.js';

/**
 * Every input schema and what it cannot say, found by the `$id` of the schema the compiler is
 * handed (Fastify hands over a copy, without the marks of src/text.ts): each is compiled from the
 * schema object itself, once.
 */
const INPUTS = new Map(
  [...PLANT_INPUTS, ...WEBHOOK_INPUTS, ...FEED_INPUTS].map((input) => {
    if (input.schema.$id === undefined) throw new Error('an input schema needs an $id');
    return [input.schema.$id, input];
  }),
);

/**
 * Schemas declared for the document alone: the conditional headers, where any value is
 * well-formed (see IfMatchHeaders). Their check answers a bare `true`, not `{ value }`: Fastify
 * keeps a returned value as the request's headers, and from then on every read of
 * `request.headers` copies all of them into a new object.
 */
const DECLARED_ONLY = new Set([IfMatchHeaders.$id, IfNoneMatchHeaders.$id, ListHeaders.$id, FeedHeaders.$id]);
const anything = () => true;

export const inputValidatorCompiler: FastifySchemaCompiler<{ $id?: string }> = ({ schema, url, httpPart }) => {
  if (schema.$id !== undefined && DECLARED_ONLY.has(schema.$id)) return anything;
  const input = schema.$id === undefined ? undefined : INPUTS.get(schema.$id);
  if (input === undefined) throw new Error(`no input rules for the ${httpPart} schema of ${url}`);
  const check = compileInput(input.schema, {
    source: httpPart === 'body' ? 'json' : 'text',
    fields: input.fields,
    refs: sharedSchemas,
  });
  return (value: unknown) => {
    try {
      return { value: check(value) };
    } catch (error) {
      return { error: error as Error };
    }
  };
};
