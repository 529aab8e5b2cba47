import type { FastifySchemaCompiler } from 'fastify';
import { FEED_VALIDATORS, FeedHeaders } from '../feed/schemas.js';
import { PLANT_VALIDATORS } from '../plants/validate.js';
import { ListHeaders } from '../plants/list-query.js';
import { IfMatchHeaders, IfNoneMatchHeaders } from '../schemas.js';
import { WEBHOOK_VALIDATORS } from '../webhooks/validate.js';

/**
 * The exact check behind each input schema (see plants/validate.ts for why not Ajv), as each
 * feature pairs them: found by the `$id` of the schema the compiler is handed, which each pair
 * takes from its schema object, so no name is written twice.
 */
const EXACT_VALIDATORS = new Map(
  [...PLANT_VALIDATORS, ...WEBHOOK_VALIDATORS, ...FEED_VALIDATORS].map(({ schema, validate }) => {
    if (schema.$id === undefined) throw new Error('the schema of an exact validator needs an $id');
    return [schema.$id, validate];
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

export const exactValidatorCompiler: FastifySchemaCompiler<{ $id?: string }> = ({ schema, url, httpPart }) => {
  if (schema.$id !== undefined && DECLARED_ONLY.has(schema.$id)) return anything;
  const validate = schema.$id === undefined ? undefined : EXACT_VALIDATORS.get(schema.$id);
  if (!validate) throw new Error(`no exact validator for the ${httpPart} schema of ${url}`);
  return (input: unknown) => {
    try {
      return { value: validate(input) };
    } catch (error) {
      return { error: error as Error };
    }
  };
};
