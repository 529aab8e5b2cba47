import type { TSchema } from '@sinclair/typebox';
import type { TEXT } from '../text.js';

/** A keyword (or a rule that follows from one) whose refusal a message can be given for. */
export type Rule =
  | 'type'
  | 'null'
  | 'required'
  | 'once'
  | 'minLength'
  | 'maxLength'
  | 'range'
  | 'minItems'
  | 'maxItems'
  | 'enum'
  | 'pattern'
  | 'format';

/** The project's words for a refusal, or null when the location's `check` says it instead. */
export type RuleMessage = string | ((value: unknown) => string) | null;

/** What an input schema cannot say at one location: `''` the whole input, `name` a property, `events[]` an array's items. */
export interface FieldRules {
  messages?: Partial<Record<Rule, RuleMessage>>;
  /** A rule no keyword can say (the schema's description says it in words), run once the keywords pass; returns the value to keep. */
  check?: (value: never) => unknown;
}

/**
 * An input schema (with an `$id`) and what it alone cannot say. The schema is the rules' only
 * statement: http/schema-check.ts enforces its keywords, each refusal a 400 naming the field.
 */
export interface InputRules {
  schema: TSchema;
  fields?: Record<string, FieldRules>;
}

/** A JSON body (exact numbers: http/intake.ts), or the text of a query or path. */
export type InputSource = 'json' | 'text';

/** The keywords of an input schema that its check reads (http/schema-check.ts knows no others). */
export interface Schema {
  [TEXT]?: boolean;
  $ref?: string;
  type?: string;
  format?: string;
  anyOf?: Schema[];
  enum?: string[];
  pattern?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean;
  items?: Schema;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
}
