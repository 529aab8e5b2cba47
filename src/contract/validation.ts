import type { FastifySchemaCompiler } from 'fastify';
import { validateFeedQuery } from '../feed/schemas.js';
import { validateListQuery, validateNewPlant, validatePlantIdParams, validatePlantPatch } from '../plants/validate.js';
import { WEBHOOK_VALIDATORS } from '../webhooks/validate.js';

/** Which exact check stands behind each input schema (see plants/validate.ts for why not Ajv). */
const EXACT_VALIDATORS: Record<string, (input: unknown) => unknown> = {
  NewPlant: validateNewPlant,
  ListQuery: validateListQuery,
  PlantPatch: validatePlantPatch,
  PlantIdParams: validatePlantIdParams,
  FeedQuery: validateFeedQuery,
  ...WEBHOOK_VALIDATORS,
};

/**
 * Schemas declared for the document alone: the conditional headers, where any value is
 * well-formed (see IfMatchHeaders). Their check answers a bare `true`, not `{ value }`: Fastify
 * keeps a returned value as the request's headers, and from then on every read of
 * `request.headers` copies all of them into a new object.
 */
const DECLARED_ONLY = new Set(['IfMatchHeaders', 'IfNoneMatchHeaders', 'FeedHeaders']);
const anything = () => true;

export const exactValidatorCompiler: FastifySchemaCompiler<{ $id?: string }> = ({ schema, url, httpPart }) => {
  if (schema.$id !== undefined && DECLARED_ONLY.has(schema.$id)) return anything;
  const validate = schema.$id === undefined ? undefined : EXACT_VALIDATORS[schema.$id];
  if (!validate) throw new Error(`no exact validator for the ${httpPart} schema of ${url}`);
  return (input: unknown) => {
    try {
      return { value: validate(input) };
    } catch (error) {
      return { error: error as Error };
    }
  };
};
