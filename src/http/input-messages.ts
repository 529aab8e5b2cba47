import type { InputSource, Rule, Schema } from './input-rules.js';

const subject = (at: string) => (at === '' ? 'request body' : at);

/** The project's message for each rule, from the keyword's value and the field's name (`at`). */
export function defaultMessage(rule: Rule, schema: Schema, at: string, source: InputSource): string {
  switch (rule) {
    case 'type':
    case 'null':
      if (schema.type === 'object') return `${subject(at)} must be a JSON object`;
      if (schema.type === 'array') return `${subject(at)} must be a JSON array`;
      if (schema.type === 'boolean') return `${at} must be true or false`;
      if (schema.format === 'date-time') return defaultMessage('format', schema, at, source);
      if (schema.format === 'int64' && source === 'text') {
        return `${at} must be an integer in canonical decimal form (an optional -, digits, no leading zero)`;
      }
      if (schema.type === 'integer' && schema.format !== 'int64') return defaultMessage('range', schema, at, source);
      return `${at} must be ${schema.type === 'integer' ? 'an integer' : 'a string'}`;
    case 'range':
      return schema.format === 'int64'
        ? `${at} must be within the signed 64-bit integer range`
        : `${at} must be an integer from ${schema.minimum} to ${schema.maximum}`;
    case 'required':
      return `${at} is required`;
    case 'once':
      return `${at} must be given at most once`;
    case 'minLength':
      return schema.minLength === 1
        ? `${at} must not be empty`
        : `${at} must be at least ${schema.minLength} characters`;
    case 'maxLength':
      return `${at} must be at most ${schema.maxLength} characters`;
    case 'minItems':
      return `${subject(at)} must hold at least ${schema.minItems} items`;
    case 'maxItems':
      return source === 'text'
        ? `${at} may be given at most ${schema.maxItems} times`
        : `${subject(at)} must hold at most ${schema.maxItems} items`;
    case 'enum':
      return `${at} must be one of ${schema.enum!.join(', ')}`;
    case 'format':
      return `${at} must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z`;
    case 'pattern':
      throw new Error('a pattern has no default message');
  }
}
