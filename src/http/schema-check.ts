import type { TSchema } from '@sinclair/typebox';
import { HttpError } from '../errors.js';
import { LIMITS } from '../limits.js';
import { TEXT } from '../text.js';
import { defaultMessage } from './input-messages.js';
import type { FieldRules, InputSource, Rule, Schema } from './input-rules.js';

/**
 * An input schema as the check a request is held to. The schema (which the document serves) is
 * the only statement of the rules: this walker enforces the keywords the input schemas use, each
 * refusal a 400 whose message names the field and the rule. Not Ajv: it coerces ("5" -> 5, "" ->
 * 0), cannot see a 64-bit integer, and its messages are not the project's. A keyword the walker
 * does not enforce fails when the schema is compiled, so the document never promises more than the
 * server checks. Lengths count code points, as JSON Schema does.
 */

const KEYWORDS = new Set([
  ...['$id', 'title', 'description', 'examples', 'default'],
  ...['$ref', 'type', 'format', 'anyOf', 'enum', 'pattern', 'properties', 'required', 'additionalProperties', 'items'],
  ...['minLength', 'maxLength', 'minimum', 'maximum', 'minItems', 'maxItems'],
]);
const FORMATS: Record<string, string> = { int64: 'integer', int32: 'integer', 'date-time': 'string', uri: 'string' };

// The checks of a string's and an integer's keywords; compileInput below walks the rest.

type Check = (value: unknown, at: string) => unknown;
/** Throws the refusal's 400, or returns when the location's `check` says it instead. */
type Fail = (value: unknown, at: string) => void;

const RFC_3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const UNSIGNED_INTEGER = /^\d+$/;
/** An integer in canonical decimal: an optional -, digits, no leading zero (`-0` aside, refused apart). */
const CANONICAL_INTEGER = /^-?(?:0|[1-9]\d*)$/;

/** A value of the wrong type refused: `null` by its own rule (a location may word it apart), else by `type`. */
function typeFailure(fail: (rule: Rule) => Fail): Fail {
  const [wrongType, isNull] = [fail('type'), fail('null')];
  return (value, at) => (value === null ? isNull : wrongType)(value, at);
}

function codePoints(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}

function stringCheck(schema: Schema, fail: (rule: Rule) => Fail): Check {
  const { minLength = 0, maxLength = Infinity } = schema;
  const [wrongType, tooShort, tooLong] = [typeFailure(fail), fail('minLength'), fail('maxLength')];
  const pattern = schema.pattern === undefined ? null : new RegExp(schema.pattern);
  const unmatched = pattern === null ? null : fail('pattern');
  const dateTime = schema.format === 'date-time';
  const notATime = dateTime ? fail('format') : null;
  const text = schema[TEXT] === true;
  return (value, at) => {
    if (typeof value !== 'string') return wrongType(value, at);
    // The code points are counted only when the UTF-16 length leaves the answer open.
    if (value.length < minLength || (minLength > 1 && codePoints(value) < minLength)) tooShort(value, at);
    if (value.length > maxLength && codePoints(value) > maxLength) tooLong(value, at);
    if (text && value.includes('\u0000')) throw new HttpError(400, `${at} must not contain U+0000`);
    if (text && !value.isWellFormed()) {
      throw new HttpError(400, `${at} must be valid Unicode (it has an unpaired surrogate)`);
    }
    if (pattern !== null && !pattern.test(value)) unmatched!(value, at);
    if (!dateTime) return value;
    const time = RFC_3339.test(value) ? new Date(value) : null;
    if (time === null || Number.isNaN(time.getTime())) notATime!(value, at);
    return time;
  };
}

/** A query's or a path's integer, from its text: digits, within the schema's range. */
function integerTextCheck(schema: Schema, fail: (rule: Rule) => Fail): Check {
  const [wrongType, outside] = [fail('type'), fail('range')];
  if (schema.format === 'int64') {
    return (value, at) => {
      if (typeof value !== 'string' || !CANONICAL_INTEGER.test(value) || value === '-0') wrongType(value, at);
      // Past 20 characters it is out of range whatever the digits: BigInt is spared a long string.
      const id = (value as string).length > 20 ? LIMITS.int64Max + 1n : BigInt(value as string);
      if (id < LIMITS.int64Min || id > LIMITS.int64Max) outside(value, at);
      return id;
    };
  }
  const { minimum, maximum } = schema;
  if (minimum === undefined || maximum === undefined || minimum < 0 || maximum > LIMITS.limitMax) {
    throw new Error('a query integer needs a minimum of 0 or more and a maximum within int32');
  }
  return (value, at) => {
    if (typeof value !== 'string' || !UNSIGNED_INTEGER.test(value)) wrongType(value, at);
    const number = Number(value);
    if (number < minimum || number > maximum) outside(value, at);
    return number;
  };
}

/**
 * A body's integer, exact over int64: the body's numbers are read exactly (http/intake.ts),
 * so an integer beyond ±2^53 is a BigInt, one too long to hold is ±Infinity, and a fraction is
 * never mistaken for an integer.
 */
function int64Check(schema: Schema, fail: (rule: Rule) => Fail): Check {
  if (schema.format !== 'int64') throw new Error('a body integer must be format int64');
  const [wrongType, notNumber, outside] = [fail('type'), typeFailure(fail), fail('range')];
  return (value, at) => {
    if (typeof value === 'bigint') {
      if (value < LIMITS.int64Min || value > LIMITS.int64Max) outside(value, at);
      return value;
    }
    if (typeof value !== 'number') notNumber(value, at);
    if (value === Infinity || value === -Infinity) outside(value, at);
    if (!Number.isSafeInteger(value)) wrongType(value, at);
    return BigInt(value as number);
  };
}

export interface CompileOptions {
  source: InputSource;
  /** By location: `''` the input, `name` a property, `events[]` an array's items. */
  fields?: Record<string, FieldRules>;
  /** The schemas a `$ref` may name, by `$id`. */
  refs?: readonly TSchema[];
}

/** The input's check, compiled once per schema: returns the value as the route reads it, or throws a 400. */
export function compileInput(
  root: TSchema,
  { source, fields = {}, refs = [] }: CompileOptions,
): (input: unknown) => unknown {
  const byId = new Map(refs.map((schema) => [schema.$id, schema as Schema]));

  function compile(schema: Schema, where: string): Check {
    if (schema.$ref !== undefined) {
      const target = byId.get(schema.$ref);
      if (target === undefined) throw new Error(`${where}: no schema ${schema.$ref} to refer to`);
      return compile(target, where);
    }
    for (const keyword of Object.keys(schema)) {
      if (!KEYWORDS.has(keyword)) throw new Error(`${where || 'the input'}: the input check does not know ${keyword}`);
    }
    if (schema.format !== undefined && FORMATS[schema.format] !== schema.type) {
      throw new Error(`${where}: the input check does not know format ${schema.format} on ${schema.type}`);
    }
    const fail = (rule: Rule) => failure(rule, schema, where);
    const keywords = keywordCheck(schema, where, fail);
    const check = fields[where]?.check;
    if (check === undefined) return keywords;
    return (value, at) => check(keywords(value, at) as never);
  }

  /** The refusal of a rule at a location: its message as the location's rules give it, else the project's default. */
  function failure(rule: Rule, schema: Schema, where: string): Fail {
    const given = fields[where]?.messages?.[rule];
    if (given === null) return () => undefined;
    if (given === undefined && rule === 'null') return failure('type', schema, where);
    if (given === undefined && rule === 'pattern')
      throw new Error(`the pattern of ${where} needs its message or a check`);
    return (value, at) => {
      const message = given === undefined ? defaultMessage(rule, schema, at, source) : given;
      throw new HttpError(400, typeof message === 'function' ? message(value) : message);
    };
  }

  function keywordCheck(schema: Schema, where: string, fail: (rule: Rule) => Fail): Check {
    if (schema.anyOf !== undefined) {
      const [other, more] = schema.anyOf.filter((member) => member.type !== 'null');
      if (more !== undefined || other === undefined || schema.anyOf.length !== 2) {
        throw new Error(`${where}: the input check knows anyOf only as one schema or null`);
      }
      const check = compile(other, where);
      return (value, at) => (value === null ? null : check(value, at));
    }
    if (schema.enum !== undefined) {
      const allowed = new Set(schema.enum);
      const outside = fail('enum');
      return (value, at) => {
        if (!allowed.has(value as string)) outside(value, at);
        return value;
      };
    }
    switch (schema.type) {
      case 'object':
        return objectCheck(schema, where, fail);
      case 'array':
        return arrayCheck(schema, where, fail);
      case 'string':
        return stringCheck(schema, fail);
      case 'integer':
        return source === 'text' ? integerTextCheck(schema, fail) : int64Check(schema, fail);
      case 'boolean': {
        const wrongType = typeFailure(fail);
        return (value, at) => {
          if (typeof value !== 'boolean') wrongType(value, at);
          return value;
        };
      }
      default:
        throw new Error(`${where}: the input check does not know type ${schema.type}`);
    }
  }

  function objectCheck(schema: Schema, where: string, fail: (rule: Rule) => Fail): Check {
    if (schema.additionalProperties === false) throw new Error(`${where}: the input check allows other properties`);
    const required = new Set(schema.required ?? []);
    const properties = Object.entries(schema.properties ?? {}).map(([name, property]) => {
      const path = where === '' ? name : `${where}.${name}`;
      return {
        name,
        check: compile(property, path),
        missing: required.has(name) ? failure('required', property, path) : null,
        once: source === 'text' && property.type !== 'array' ? failure('once', property, path) : null,
      };
    });
    const notObject = typeFailure(fail);
    return (value, at) => {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) notObject(value, at);
      const input = value as Record<string, unknown>;
      const output: Record<string, unknown> = {};
      // A query's shape (each parameter given once where it must be) is judged before any value.
      for (const { name, once } of properties) if (once !== null && Array.isArray(input[name])) once(input[name], name);
      for (const { name, check, missing } of properties) {
        const field = at === '' ? name : `${at}.${name}`;
        const given = input[name];
        if (given === undefined) missing?.(given, field);
        else output[name] = check(given, field);
      }
      return output;
    };
  }

  function arrayCheck(schema: Schema, where: string, fail: (rule: Rule) => Fail): Check {
    const item = compile(schema.items!, `${where}[]`);
    const { minItems = 0, maxItems = Infinity } = schema;
    const [tooFew, tooMany] = [fail('minItems'), fail('maxItems')];
    if (source === 'text') {
      if (minItems > 0) throw new Error(`${where}: a query parameter cannot be required to repeat`);
      return (value, at) => {
        const items = [value].flat();
        if (items.length > maxItems) tooMany(value, at);
        return items.map((each) => item(each, at));
      };
    }
    const notArray = typeFailure(fail);
    return (value, at) => {
      if (!Array.isArray(value)) notArray(value, at);
      const items = value as unknown[];
      if (items.length < minItems) tooFew(value, at);
      if (items.length > maxItems) tooMany(value, at);
      return items.map((each, i) => item(each, `${at}[${i}]`));
    };
  }

  const check = compile(root as Schema, '');
  return (input) => check(input, '');
}
