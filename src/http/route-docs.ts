import { Type } from '@sinclair/typebox';

/**
 * What a route's schema says of its place in the OpenAPI document: its tag, its error statuses and
 * a bodiless answer. The document (contract/openapi.ts) describes each tag and each error status
 * once, for every route that names it, so a new route is documented like the others by using
 * these helpers.
 */

/** The tag of each operation: each has exactly one. */
export const TAGS = { plants: 'plants', webhooks: 'webhooks', operations: 'operations' } as const;
export type Tag = (typeof TAGS)[keyof typeof TAGS];

/** Each error status an operation may list; the document describes each, with an example message. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 406 | 408 | 409 | 410 | 412 | 413 | 415 | 429 | 431 | 500 | 503;

/** An answer without a body: declared `null` in the document, sent as nothing (`reply.send()`). */
export const NoContent = (description: string, headers?: object) =>
  Type.Unsafe<void>({ description, ...(headers && { headers }), type: 'null' });

/**
 * An operation's error responses, all with the `Error` body, and `default` for the rest. In the
 * document each becomes a `$ref` to `#/components/responses/Error<status>` (or `OtherErrors`),
 * which holds its description.
 */
export function errorResponses(...statuses: ErrorStatus[]): Record<string, object> {
  const error = { description: 'Error', $ref: 'Error#' };
  return { ...Object.fromEntries(statuses.map((status) => [status, error])), default: error };
}
