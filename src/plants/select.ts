import { Type, type Static } from '@sinclair/typebox';
import { wholeValue } from '../patterns.js';
import { PLANT_COLUMNS, serializePlant, toPlant } from '../plant-fields.js';
import type { PlantRecord } from '../storage/types/plants.js';
import { HttpError } from '../errors.js';

/**
 * `select` on the reads (GET /plants, GET /plants/{id}), as PostgREST has it: a comma-separated list
 * of the fields to return, from the id and the plant's fields (plant-fields.ts). It changes how
 * each plant is written, never which plants a listing holds: a cursor need not carry it, but a
 * page's JSON text is kept per selection (the page cache's key holds `selectionKey`).
 */

export type SelectableField = (typeof PLANT_COLUMNS)[number];

/** The fields asked for, in the order asked; null without `select`: the spec's `Plant`. */
export type Selection = readonly SelectableField[] | null;

const FIELD = `(?:${PLANT_COLUMNS.join('|')})`;

export const SelectParam = Type.Optional(
  Type.String({
    pattern: wholeValue(`${FIELD}(?:,${FIELD})*`),
    // No example: the /docs page fills a parameter's example in for Try it out, and a listing there
    // should answer the spec's Plant unless the reader asks for more.
    description:
      `The fields to return, comma-separated, each at most once, from ${PLANT_COLUMNS.join(', ')} ` +
      '(as PostgREST has it), for instance id,name,tag. Without it each plant is exactly a Plant (no id). With it, each plant holds only ' +
      'the fields named, in that order; the id is an exact int64 JSON number. An unknown or repeated field is a ' +
      '400 naming it.',
  }),
);

/** The query of GET /plants/{id}: only `select`. */
export const SelectQuery = Type.Object({ select: SelectParam }, { $id: 'SelectQuery' });
export type SelectQuery = Static<typeof SelectQuery>;

/**
 * `select`'s pattern, with messages that name the unknown field, and what no pattern here says:
 * each field at most once (the description says it).
 */
export function checkSelect(text: string): string {
  const fields: string[] = [];
  for (const field of text.split(',')) {
    if (!(PLANT_COLUMNS as readonly string[]).includes(field)) {
      throw new HttpError(
        400,
        `select names an unknown field ${JSON.stringify(field)}; the fields are ${PLANT_COLUMNS.join(', ')}`,
      );
    }
    if (fields.includes(field)) throw new HttpError(400, `select names the field ${field} more than once`);
    fields.push(field);
  }
  return text;
}

export function selectionOf(select: string | undefined): Selection {
  return select === undefined ? null : (select.split(',') as SelectableField[]);
}

/** One string per selection, for the page cache's key. */
export function selectionKey(selection: Selection): string {
  return selection === null ? '' : selection.join(',');
}

/**
 * The JSON text of one plant as selected. Without a selection, the `Plant` serializer every other
 * response uses (byte for byte as before `select` existed); the id is written as digits, never a double.
 */
export function plantJson(record: PlantRecord, selection: Selection): string {
  if (selection === null) return serializePlant(toPlant(record));
  const members: string[] = [];
  for (const field of selection) {
    const value = record[field];
    if (typeof value === 'bigint') members.push(`"id":${value}`);
    else if (typeof value === 'string') members.push(`${JSON.stringify(field)}:${JSON.stringify(value)}`);
  }
  return `{${members.join(',')}}`;
}
