import { Type, type Static } from '@sinclair/typebox';
import { LIMITS } from './limits.js';
import { wholeValue } from './patterns.js';
import { Text } from './text.js';

export const Plant = Type.Object(
  {
    name: Type.String({ description: 'The name of the plant' }),
    tag: Type.Optional(
      Type.String({ description: 'Tag that specifies the type of the plant; omitted when the plant has none' }),
    ),
  },
  { $id: 'Plant', examples: [{ name: 'Monstera deliciosa', tag: 'aroid' }] },
);
export type Plant = Static<typeof Plant>;

export const Plants = Type.Array(Type.Ref(Plant), {
  examples: [[{ name: 'Monstera deliciosa', tag: 'aroid' }, { name: 'Sansevieria' }]],
});

/**
 * A plant as the reads (`GET /plants`, `GET /plants/{id}`) answer it: without `select` exactly a
 * `Plant`; with it, only the fields it names. Every property is optional, since `select` decides
 * which appear: a generated client types `id` as an optional int64 and the client library narrows
 * it to what was selected.
 */
export const SelectedPlant = Type.Partial(
  Type.Object({
    id: Type.Unsafe<bigint>({
      type: 'integer',
      format: 'int64',
      description: 'The plant id, exact over the signed 64-bit range; present only when select names id',
    }),
    ...Plant.properties,
  }),
  {
    $id: 'SelectedPlant',
    description:
      'A plant as a read answers it. Without select: exactly a Plant (every field that has a value). ' +
      'With select: the fields it names, in its order; a field without a value is still omitted.',
    examples: [{ id: 1, name: 'Monstera deliciosa', tag: 'aroid' }, { name: 'Sansevieria' }],
  },
);
export type SelectedPlant = Static<typeof SelectedPlant>;

export const SelectedPlants = Type.Array(Type.Ref(SelectedPlant), {
  examples: [[{ name: 'Monstera deliciosa', tag: 'aroid' }, { name: 'Sansevieria' }]],
});

export const NewPlant = Type.Object(
  {
    id: Type.Unsafe<bigint>({
      type: 'integer',
      format: 'int64',
      description:
        'Identification number of the plant, unique within the account; exact over the whole signed 64-bit range. ' +
        'Re-sending an id with the same value in every field returns the stored plant; with any field different, 409.',
    }),
    name: Text({
      minLength: 1,
      maxLength: LIMITS.textLength,
      description: `The name of the plant: 1 to ${LIMITS.textLength} characters, no U+0000 or unpaired surrogate, stored exactly as sent`,
    }),
    tag: Type.Optional(
      Text({
        maxLength: LIMITS.textLength,
        description: `Tag that specifies the type of the plant: up to ${LIMITS.textLength} characters, no U+0000 or unpaired surrogate`,
      }),
    ),
  },
  {
    $id: 'NewPlant',
    additionalProperties: true,
    description: 'Extra properties are accepted and ignored.',
    examples: [{ id: 1, name: 'Monstera deliciosa', tag: 'aroid' }],
  },
);
export type NewPlant = Static<typeof NewPlant>;

export const PlantPatch = Type.Object(
  {
    // A created name's rules, written once there.
    name: Type.Optional({
      ...NewPlant.properties.name,
      description: 'New name: same rules as on create; it cannot be removed',
    }),
    tag: Type.Optional(
      Type.Union([Text({ maxLength: LIMITS.textLength }), Type.Null()], {
        description: 'New tag (same rules as on create), or null to remove the tag',
      }),
    ),
    id: Type.Optional(
      Type.Unsafe<bigint>({ type: 'integer', format: 'int64', description: "When present, must equal the path's id" }),
    ),
  },
  {
    $id: 'PlantPatch',
    examples: [{ tag: null }, { name: 'Monstera adansonii', tag: 'aroid' }],
    additionalProperties: true,
    description:
      'A JSON merge patch (RFC 7396) of the plant: absent fields stay as they are. Other properties are ignored; ' +
      'an empty object changes nothing.',
  },
);
export type PlantPatch = Static<typeof PlantPatch>;

export const PlantIdParams = Type.Object(
  {
    id: Type.Unsafe<bigint>({
      type: 'integer',
      format: 'int64',
      description:
        'The plant id in canonical decimal: an optional -, then digits with no leading zero; within the signed 64-bit range',
    }),
  },
  { $id: 'PlantIdParams' },
);
export type PlantIdParams = Static<typeof PlantIdParams>;

/**
 * The conditional headers of the by-id operations, declared so that the document (and Try it out,
 * and generated clients) can send them. Any entity-tag list is accepted: one that matches nothing
 * is a 412 (If-Match) or a full answer (If-None-Match), not a bad request.
 */
/**
 * If-Match as RFC 9110 has it (§13.1.1, §8.8.3, §5.6.3): `*`, or a comma-separated list of entity
 * tags (empty list elements allowed; a tag's characters `!`, `#` to `~`, or beyond ASCII), with
 * optional whitespace (space and tab, nothing else) around the commas.
 */
const OPAQUE_TAG = '(?:W/)?"[\\x21\\x23-\\x7e\\x80-\\xff]*"';
const OWS_OR_COMMA = '[ \\t,]*';
export const IF_MATCH_PATTERN = wholeValue(
  `${OWS_OR_COMMA}(?:\\*|${OPAQUE_TAG}(?:[ \\t]*,(?:[ \\t]*${OPAQUE_TAG})?)*)${OWS_OR_COMMA}`,
);

export const IfMatchHeaders = Type.Object(
  {
    'if-match': Type.Optional(
      Type.String({
        // The pattern refuses an empty value too; said outright for generators that skip patterns.
        minLength: 1,
        pattern: IF_MATCH_PATTERN,
        description:
          'Change the plant only if its current ETag is one of these (or *); else 412 and nothing changes. ' +
          'A value that is not * or a list of quoted entity tags is a 400 naming If-Match',
        examples: ['"1b8nxygd0dn5f"'],
      }),
    ),
  },
  { $id: 'IfMatchHeaders' },
);

export const IfNoneMatchHeaders = Type.Object(
  {
    'if-none-match': Type.Optional(
      Type.String({
        description: 'Answer 304 with no body when the current ETag is one of these (or *)',
        examples: ['"1b8nxygd0dn5f"'],
      }),
    ),
  },
  { $id: 'IfNoneMatchHeaders' },
);

export const ErrorSchema = Type.Object(
  {
    error: Type.Integer({ format: 'int32', description: 'The HTTP status code' }),
    message: Type.String({ description: 'What went wrong, for a human' }),
  },
  { $id: 'Error', examples: [{ error: 400, message: 'name must be a string' }] },
);

/** The body of `POST /plants/batch`. */
export const NewPlants = Type.Array(Type.Ref(NewPlant), {
  $id: 'NewPlants',
  minItems: 1,
  maxItems: LIMITS.batchItems,
  description:
    `1 to ${LIMITS.batchItems} plants, each judged as POST /plants judges one. ` +
    'An id given twice with any field different is a 400 naming the later item.',
  examples: [
    [
      { id: 1, name: 'Monstera deliciosa', tag: 'aroid' },
      { id: 2, name: 'Sansevieria' },
    ],
  ],
});

/** The `$id`'d shapes, registered once so they become OpenAPI components. */
export const sharedSchemas = [Plant, SelectedPlant, NewPlant, NewPlants, PlantPatch, ErrorSchema];
