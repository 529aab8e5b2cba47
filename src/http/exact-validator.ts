import type { TSchema } from '@sinclair/typebox';

/**
 * An input schema and the exact check that stands behind it (see plants/validate.ts for why not
 * Ajv): the schema is what the document declares, the check what a request is held to. Each
 * feature lists its pairs beside its checks; test/contract/validators.test.ts proves that each
 * check accepts and refuses what its schema does.
 */
export interface ExactValidator {
  /** With an `$id`: Fastify hands the validator compiler a copy, found again by it. */
  schema: TSchema;
  validate: (input: unknown) => unknown;
}
