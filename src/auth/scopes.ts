export const SCOPES = ['plants:read', 'plants:write', 'webhooks:manage'] as const;
export type Scope = (typeof SCOPES)[number];

/** Who is calling: the account whose plants they reach and what they may do with them. */
export interface Caller {
  account: string;
  scopes: ReadonlySet<string>;
  /** A JWT's last moment of validity (epoch ms, clock tolerance included): open change feeds end then. */
  expiresAt?: number;
}
