import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TSchema } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { compileInput } from '../../src/http/schema-check.js';
import { PLANT_INPUTS } from '../../src/plants/validate.js';
import { NewPlant, sharedSchemas } from '../../src/schemas.js';
import { WEBHOOK_INPUTS } from '../../src/webhooks/validate.js';

/**
 * Each input check, compiled from its schema, accepts and refuses the bodies a JSON Schema
 * validator does (Ajv, without coercion, reading the schema as a client's tools would): the
 * walker (http/schema-check.ts) reads the keywords as JSON Schema means them. The bodies are derived from each schema: its
 * examples, and one wrong thing at a time (a required field missing, a field of another type, a
 * string past its length, an unknown field where none is allowed). Path and query parameters
 * arrive as text and are converted by their checks, so only bodies are compared here.
 */

const ajv = new Ajv({ strict: false, coerceTypes: false, allErrors: false });
addFormats.default(ajv);
// A batch's items are NewPlant by reference, as in the served document.
ajv.addSchema(NewPlant);

type Schema = TSchema & {
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean;
  examples?: unknown[];
  maxLength?: number;
  minLength?: number;
  minItems?: number;
  maxItems?: number;
};

const OF_ANOTHER_TYPE: Record<string, unknown[]> = {
  string: [5, true, [], {}],
  integer: ['5', 1.5, true, [], {}],
  boolean: ['true', 1, [], {}],
  array: ['plant.created', 5, {}],
};

/** An array of items: too few, too many, not an array, and an item that breaks its own schema. */
function wrongArrays(schema: Schema, valid: unknown[]): Array<[string, unknown]> {
  const wrong: Array<[string, unknown]> = [
    ['not an array', { ...valid }],
    ['null', null],
    ['an item of another type', [...valid, 'plant']],
    ['an item missing its fields', [...valid, {}]],
  ];
  if (schema.minItems !== undefined) wrong.push(['too few items', valid.slice(0, schema.minItems - 1)]);
  if (schema.maxItems !== undefined) {
    wrong.push(['too many items', Array.from({ length: schema.maxItems + 1 }, () => valid[0])]);
  }
  return wrong;
}

/** The bodies that break exactly one rule of the schema, each with what it breaks. */
function wrongBodies(schema: Schema, valid: Record<string, unknown>): Array<[string, unknown]> {
  if (schema.type === 'array') return wrongArrays(schema, valid as unknown as unknown[]);
  const wrong: Array<[string, unknown]> = [
    ['not an object', []],
    ['null', null],
  ];
  for (const name of schema.required ?? []) {
    const { [name]: _, ...rest } = valid;
    wrong.push([`${name} missing`, rest]);
  }
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    for (const value of OF_ANOTHER_TYPE[property.type as string] ?? []) {
      wrong.push([`${name} as ${JSON.stringify(value)}`, { ...valid, [name]: value }]);
    }
    if (property.maxLength !== undefined) {
      wrong.push([`${name} too long`, { ...valid, [name]: 'a'.repeat(property.maxLength + 1) }]);
    }
    if (property.minLength !== undefined && property.minLength > 0) {
      wrong.push([`${name} too short`, { ...valid, [name]: 'a'.repeat(property.minLength - 1) }]);
    }
  }
  if (schema.additionalProperties === false) wrong.push(['an unknown field', { ...valid, unknown: 1 }]);
  return wrong;
}

function accepts(validate: (input: unknown) => unknown, body: unknown): boolean {
  try {
    validate(body);
    return true;
  } catch {
    return false;
  }
}

const BODIES = [...PLANT_INPUTS, ...WEBHOOK_INPUTS].filter(({ schema }) => !/Params$|Query$/.test(schema.$id!));

describe('each input check accepts and refuses what its schema does', () => {
  it('covers every body schema that has a check', () => {
    assert.deepEqual(BODIES.map(({ schema }) => schema.$id).sort(), [
      'NewPlant',
      'NewPlants',
      'NewWebhookEndpoint',
      'PlantPatch',
      'RecoverRequest',
      'WebhookEndpointPatch',
    ]);
  });

  for (const { schema, fields } of BODIES) {
    const validate = compileInput(schema, { source: 'json', fields, refs: sharedSchemas });
    const json = schema as Schema;
    const check = ajv.compile({ ...json, $id: undefined });
    describe(schema.$id!, () => {
      const examples = (json.examples ?? []) as Record<string, unknown>[];
      it('has examples, and both accept each of them', () => {
        assert.ok(examples.length > 0, 'the schema shows an example');
        for (const example of examples) {
          assert.equal(check(example), true, `schema: ${JSON.stringify(example)}`);
          assert.equal(accepts(validate, example), true, `check: ${JSON.stringify(example)}`);
        }
      });
      it('both refuse each body that breaks one rule of the schema', () => {
        for (const [what, body] of wrongBodies(json, examples[0]!)) {
          assert.equal(check(body), false, `the schema accepts ${what}`);
          assert.equal(accepts(validate, body), false, `the check accepts ${what}`);
        }
      });
    });
  }
});
