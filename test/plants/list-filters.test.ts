import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeCursor, encodeCursor } from '../../src/plants/cursor.js';
import { FILTER_PARAMS, filterOf, ListQuery } from '../../src/plants/list-query.js';
import { compileInput } from '../../src/http/schema-check.js';
import { PLANT_INPUTS } from '../../src/plants/validate.js';
import {
  canonicalFilter,
  onlyFilter,
  PLANT_FILTER_KEYS,
  type PlantFilter,
  type PlantFilterKey,
} from '../../src/storage/plant-query.js';

const validateListQuery = compileInput(ListQuery, {
  source: 'text',
  fields: PLANT_INPUTS.find(({ schema }) => schema === ListQuery)!.fields,
}) as (query: unknown) => ListQuery;

/** A value of each filter as its query parameter gives it: a filter added to PlantFilter must be named here. */
const SAMPLES: { [K in PlantFilterKey]-?: string } = { tags: 'aroid', text: 'fern' };

for (const key of PLANT_FILTER_KEYS) {
  const { name } = FILTER_PARAMS[key];
  test(`filter ${key} (?${name}=) reaches every place a listing's filters are read`, () => {
    assert.ok(name in ListQuery.properties, 'the schema (and so the document) declares it');
    const query = validateListQuery({ [name]: SAMPLES[key] });
    const filter = filterOf(query);
    assert.notEqual(filter[key] ?? null, null, 'the validator keeps it and the route passes it on');
    const none: PlantFilter = {};
    assert.notDeepEqual(
      canonicalFilter(filter),
      canonicalFilter(none),
      'the cursor digest and the cache key tell it apart',
    );
    const cursor = encodeCursor({ filter: none, order: 'id' }, { id: 1n, name: '' });
    assert.throws(() => decodeCursor({ filter, order: 'id' }, cursor), /cursor is not valid/);
    for (const other of PLANT_FILTER_KEYS) {
      if (other !== key)
        assert.equal(onlyFilter(filter, other), false, `a fast path for ${other} alone does not answer it`);
    }
    assert.equal(onlyFilter(filter, key), true);
  });
}
