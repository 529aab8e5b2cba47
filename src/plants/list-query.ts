import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { LIMITS } from '../limits.js';
import {
  PLANT_FILTER_KEYS,
  PLANT_ORDERS,
  type PlantFilter,
  type PlantFilterKey,
  type PlantOrder,
} from '../storage/plant-query.js';
import { Text } from '../text.js';
import { SelectParam } from './select.js';

/** The inputs of `GET /plants`: its query parameters and the header that asks for the count. */

/** How a filter of storage's `PlantFilter` is asked for: its query parameter and its schema, whose value is the filter's. */
interface FilterParam<K extends PlantFilterKey> {
  name: string;
  schema: TSchema & { static: PlantFilter[K] };
}

/** Each filter's query parameter: one entry per key of `PlantFilter` (a filter missing here does not compile). */
export const FILTER_PARAMS = {
  tags: {
    name: 'tag',
    schema: Type.Optional(
      Type.Array(Text({ maxLength: LIMITS.textLength }), {
        maxItems: LIMITS.tagFilters,
        description:
          `Only plants whose tag equals one of these exactly (code points, case matters; an empty value matches ` +
          `the empty tag). Repeat it for several tags, up to ${LIMITS.tagFilters}; each at most ` +
          `${LIMITS.textLength} characters, no U+0000. Plants without a tag never match.`,
      }),
    ),
  },
  text: {
    name: 'q',
    schema: Type.Optional(
      Text({
        minLength: 1,
        maxLength: LIMITS.textLength,
        description:
          'Only plants whose name contains this text, ignoring case: both are case-folded code point by code ' +
          "point with Unicode's simple case folding (CaseFolding.txt, C and S), then compared by code points; " +
          `nothing else is normalised. 1 to ${LIMITS.textLength} characters, no U+0000; % _ * and \\ are plain characters.`,
      }),
    ),
  },
} as const satisfies { [K in PlantFilterKey]-?: FilterParam<K> };

type FilterSchemas = {
  [K in PlantFilterKey as (typeof FILTER_PARAMS)[K]['name']]: (typeof FILTER_PARAMS)[K]['schema'];
};
const filterSchemas = Object.fromEntries(
  PLANT_FILTER_KEYS.map((key) => [FILTER_PARAMS[key].name, FILTER_PARAMS[key].schema]),
) as FilterSchemas;
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
    ...filterSchemas,
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
    select: SelectParam,
  },
  { $id: 'ListQuery' },
);
export type ListQuery = Static<typeof ListQuery>;

/** The listing's filters as the query asks for them (absent: null). */
export function filterOf(query: ListQuery): PlantFilter {
  const filter: Record<string, unknown> = {};
  for (const key of PLANT_FILTER_KEYS) filter[key] = query[FILTER_PARAMS[key].name] ?? null;
  return filter as PlantFilter;
}

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
