import { Type, type StringOptions, type TString } from '@sinclair/typebox';

/**
 * Marks a string schema as text a plant or an endpoint stores and shows back as sent: no U+0000
 * (no engine stores it) and no unpaired surrogate (it would come back as U+FFFD). No JSON Schema
 * keyword says either, so the mark is a symbol: the input check (http/schema-check.ts) reads it,
 * the served document never shows it, and each such schema's description says it in words.
 */
export const TEXT = Symbol('text');

export function Text(options: StringOptions): TString {
  return Object.assign(Type.String(options), { [TEXT]: true });
}
