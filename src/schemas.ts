import { Type, type Static } from '@sinclair/typebox';
import { PLANT_ORDERS, type PlantOrder } from './storage/plant-query.js';

/** The limits of the contract, used by the schemas (hence the OpenAPI document) and the validators. */
export const LIMITS = {
  bodyBytes: 16 * 1024,
  textLength: 256,
  /** `tag` may repeat this many times in one listing. */
  tagFilters: 16,
  /** Items of one `POST /plants/batch`, and its body. */
  batchItems: 1000,
  batchBodyBytes: 1024 * 1024,
  int64Min: -(2n ** 63n),
  int64Max: 2n ** 63n - 1n,
  limitMax: 2_147_483_647,
} as const;

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

export const NewPlant = Type.Object(
  {
    id: Type.Unsafe<bigint>({
      type: 'integer',
      format: 'int64',
      description:
        'Identification number of the plant, unique within the account; exact over the whole signed 64-bit range. ' +
        'Re-sending an id with the same name and tag returns the stored plant; with a different name or tag, 409.',
    }),
    name: Type.String({
      minLength: 1,
      maxLength: LIMITS.textLength,
      description: `The name of the plant: 1 to ${LIMITS.textLength} characters, no U+0000, stored exactly as sent`,
    }),
    tag: Type.Optional(
      Type.String({
        maxLength: LIMITS.textLength,
        description: `Tag that specifies the type of the plant: up to ${LIMITS.textLength} characters, no U+0000`,
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
    name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: LIMITS.textLength,
        description: 'New name: same rules as on create; it cannot be removed',
      }),
    ),
    tag: Type.Optional(
      Type.Union([Type.String({ maxLength: LIMITS.textLength }), Type.Null()], {
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
export const IfMatchHeaders = Type.Object(
  {
    'if-match': Type.Optional(
      Type.String({
        description: 'Change the plant only if its current ETag is one of these (or *); else 412 and nothing changes',
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

export const ListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 0,
        maximum: LIMITS.limitMax,
        examples: [10],
        description:
          'Maximum number of plants to return. Without it, every plant of the account is returned (streamed). ' +
          'When more plants remain, the response carries a Link header with rel="next".',
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        description:
          'Opaque position from a rel="next" Link header; do not build it yourself. It carries the filters and ' +
          'order it was made for: sent with others, or altered, it is a 400.',
      }),
    ),
    tag: Type.Optional(
      Type.Array(Type.String({ maxLength: LIMITS.textLength }), {
        maxItems: LIMITS.tagFilters,
        examples: [['aroid']],
        description:
          `Only plants whose tag equals one of these exactly (code points, case matters; an empty value matches ` +
          `the empty tag). Repeat it for several tags, up to ${LIMITS.tagFilters}; each at most ` +
          `${LIMITS.textLength} characters. Plants without a tag never match.`,
      }),
    ),
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: LIMITS.textLength,
        examples: ['monst'],
        description:
          'Only plants whose name contains this text, ignoring case: both are case-folded code point by code ' +
          "point with Unicode's simple case folding (CaseFolding.txt, C and S), then compared by code points; " +
          `nothing else is normalised. 1 to ${LIMITS.textLength} characters, no U+0000; % _ * and \\ are plain characters.`,
      }),
    ),
    sort: Type.Optional(
      Type.Unsafe<PlantOrder>({
        type: 'string',
        enum: [...PLANT_ORDERS],
        default: 'id',
        description:
          'id (ascending id, the default), -id (descending id), name (ascending by the code points of the name, ' +
          'ties by ascending id), -name (the exact reverse of name).',
      }),
    ),
  },
  { $id: 'ListQuery' },
);
export type ListQuery = Static<typeof ListQuery>;

/** The request header of `GET /plants` that asks for the count; declared for the document. */
export const ListHeaders = Type.Object(
  {
    prefer: Type.Optional(
      Type.String({
        examples: ['count=exact'],
        description:
          'RFC 7240 preferences. count=exact: the answer carries X-Total-Count (the plants that match the ' +
          'filters over all pages) and Preference-Applied: count=exact. Without it nothing is counted.',
      }),
    ),
  },
  { $id: 'ListHeaders' },
);

/** The body of `POST /plants/batch`. */
export const NewPlants = Type.Array(Type.Ref(NewPlant), {
  $id: 'NewPlants',
  minItems: 1,
  maxItems: LIMITS.batchItems,
  description: `1 to ${LIMITS.batchItems} plants, each judged as POST /plants judges one.`,
  examples: [
    [
      { id: 1, name: 'Monstera deliciosa', tag: 'aroid' },
      { id: 2, name: 'Sansevieria' },
    ],
  ],
});

/** The `$id`'d shapes, registered once so they become OpenAPI components. */
export const sharedSchemas = [Plant, NewPlant, NewPlants, PlantPatch, ErrorSchema];
