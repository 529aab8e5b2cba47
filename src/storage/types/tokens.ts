/** The API tokens as storage keeps them (their secrets only as hashes). */

export interface TokenRecord {
  id: string;
  account: string;
  scopes: string[];
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

export interface NewToken {
  id: string;
  account: string;
  secretHash: string;
  scopes: string[];
  createdAt: Date;
  expiresAt: Date | null;
}

export interface TokenStorage {
  createToken(token: NewToken): Promise<void>;
  findTokenByHash(secretHash: string): Promise<TokenRecord | null>;
  listTokens(account?: string): Promise<TokenRecord[]>;
  /** false when no token has this id. */
  revokeToken(id: string, at: Date): Promise<boolean>;
  /** Creates `token` only if the store has never held a token; true when it did. */
  createFirstToken(token: NewToken): Promise<boolean>;
  /**
   * A number that moves whenever any token is created, changed or removed (in the change's own
   * commit): unchanged between two reads means no token changed in between.
   */
  tokensVersion(): Promise<string>;
}
