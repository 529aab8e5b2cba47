/**
 * What every peer shares. The token check they make on every request, the service's rule without its cache: the
 * SHA-256 of the bearer secret looked up in `api_tokens` (the table the service keeps), then
 * revoked, expired and scope checked. Each peer runs the lookup with its own database client.
 */
import { createHash } from 'node:crypto';

export interface TokenRow {
  account: string;
  /** SQLite keeps scopes space-separated, PostgreSQL as an array. */
  scopes: string | string[];
  expires_at: number | Date | null;
  revoked_at: number | Date | null;
}

/** The hash to look up, or null when the header is not `Bearer <secret>`. */
export function bearerHash(header: string | undefined): string | null {
  const match = header === undefined ? null : /^bearer +(\S+) *$/i.exec(header);
  return match ? createHash('sha256').update(match[1]!).digest('base64url') : null;
}

/** The account when `row` is a live token with `scope`; else the status to answer (401 or 403). */
export function authorize(row: TokenRow | undefined, scope: string): { account: string } | { status: 401 | 403 } {
  if (row === undefined || row.revoked_at !== null) return { status: 401 };
  if (row.expires_at !== null && new Date(row.expires_at).getTime() <= Date.now()) return { status: 401 };
  const scopes = Array.isArray(row.scopes) ? row.scopes : row.scopes.split(' ');
  return scopes.includes(scope) ? { account: row.account } : { status: 403 };
}

export const scopeOf = (method: string) => (method === 'GET' ? 'plants:read' : 'plants:write');

/** The rel="next" link the peers send: the cursor is the last id of the page. */
export function nextLink(host: string | undefined, limit: number, lastId: number | bigint | string): string {
  return `<http://${host}/plants?limit=${limit}&cursor=${lastId}>; rel="next"`;
}

/** A plant as the API shows it: no id, no null tag. */
export const shown = ({ name, tag }: { name: string; tag: string | null }) => (tag === null ? { name } : { name, tag });

/** `limit` and `cursor` as the peers accept them: a plain integer each, else null (a 400). */
export function pageQuery(query: {
  limit?: unknown;
  cursor?: unknown;
}): { limit: number; after: number | null } | null {
  const limit = Number(query.limit);
  const after = query.cursor === undefined ? null : Number(query.cursor);
  if (!Number.isInteger(limit) || limit < 0 || (after !== null && !Number.isInteger(after))) return null;
  return { limit, after };
}
