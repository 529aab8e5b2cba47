import type { FastifySchemaCompiler } from 'fastify';
import { validateListQuery, validateNewPlant, validatePlantIdParams, validatePlantPatch } from '../plants/validate.js';
import { WEBHOOK_VALIDATORS } from '../webhooks/validate.js';

/** Which exact check stands behind each input schema (see plants/validate.ts for why not Ajv). */
const EXACT_VALIDATORS: Record<string, (input: unknown) => unknown> = {
  NewPlant: validateNewPlant,
  ListQuery: validateListQuery,
  PlantPatch: validatePlantPatch,
  PlantIdParams: validatePlantIdParams,
  // Conditional headers: any value is well-formed (see IfMatchHeaders).
  IfMatchHeaders: (headers) => headers,
  IfNoneMatchHeaders: (headers) => headers,
  ...WEBHOOK_VALIDATORS,
};

export const exactValidatorCompiler: FastifySchemaCompiler<{ $id?: string }> = ({ schema, url, httpPart }) => {
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
