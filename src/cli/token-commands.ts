import { Command, InvalidArgumentError, Option } from 'commander';
import { issueToken, TOKEN_PREFIX } from '../auth/api-tokens.js';
import { SCOPES, type Scope } from '../auth/scopes.js';
import { databaseSetting, toOption } from '../config.js';
import { openStorage } from '../storage/open.js';
import type { Storage } from '../storage/types.js';
import type { TokenRecord } from '../storage/types/tokens.js';
import { parseDuration } from '../config/duration.js';

function parseScopes(text: string): Scope[] {
  const scopes = text.split(',').map((s) => s.trim());
  for (const scope of scopes) {
    if (!SCOPES.includes(scope as Scope))
      throw new InvalidArgumentError(`unknown scope "${scope}"; known: ${SCOPES.join(', ')}`);
  }
  return [...new Set(scopes as Scope[])];
}

function parseAccount(text: string): string {
  if (text === '' || text.length > 256 || /[\u0000-\u001f]/.test(text)) {
    throw new InvalidArgumentError('expected 1 to 256 characters, no control characters');
  }
  return text;
}

function tokenJson(record: TokenRecord) {
  return {
    id: record.id,
    account: record.account,
    scopes: record.scopes,
    createdAt: record.createdAt.toISOString(),
    expiresAt: record.expiresAt?.toISOString() ?? null,
    revokedAt: record.revokedAt?.toISOString() ?? null,
  };
}

async function withStorage<T>(databaseUrl: string, work: (storage: Storage) => Promise<T>): Promise<T> {
  // One write at most: a thread of its own would take longer to start than the write takes.
  const storage = await openStorage(databaseUrl, { sqliteWriter: 'inline' });
  try {
    return await work(storage);
  } finally {
    await storage.close();
  }
}

const print = (text: string): void => void process.stdout.write(text + '\n');

export function tokenCommand(): Command {
  const token = new Command('token').description('manage API tokens (works while the server runs)');

  token
    .command('create')
    .description('create an API token and print it; the secret is shown only this once')
    .requiredOption('--account <name>', 'account whose plants the token reaches', parseAccount)
    .addOption(
      new Option('--scopes <list>', 'comma-separated scopes')
        .argParser(parseScopes)
        .default([...SCOPES], SCOPES.join(',')),
    )
    .option('--expires <duration>', 'lifetime, e.g. 30d, 12h, 90m (default: never expires)', parseDuration)
    .option('--json', 'print {"id","account","scopes","expiresAt","token"}')
    .addOption(toOption(databaseSetting))
    .action(
      async (options: { account: string; scopes: Scope[]; expires?: number; json?: boolean; database: string }) => {
        const expiresAt = options.expires === undefined ? null : new Date(Date.now() + options.expires);
        const { record, secret } = await withStorage(options.database, (s) =>
          issueToken(s, options.account, options.scopes, expiresAt),
        );
        if (!options.json) return print(secret);
        const { id, account, scopes, expiresAt: expires } = tokenJson(record);
        print(JSON.stringify({ id, account, scopes, expiresAt: expires, token: secret }));
      },
    );

  token
    .command('list')
    .description(
      'list tokens: id, account, scopes, creation, expiry and revocation (REVOKED: when, or - if not), never a secret',
    )
    .option('--account <name>', 'only this account', parseAccount)
    .option('--json', 'print a JSON array')
    .addOption(toOption(databaseSetting))
    .action(async (options: { account?: string; json?: boolean; database: string }) => {
      const rows = (await withStorage(options.database, (s) => s.listTokens(options.account))).map(tokenJson);
      if (options.json) return print(JSON.stringify(rows));
      print(['ID', 'ACCOUNT', 'SCOPES', 'CREATED', 'EXPIRES', 'REVOKED'].join('\t'));
      for (const r of rows) {
        print(
          [r.id, r.account, r.scopes.join(','), r.createdAt, r.expiresAt ?? 'never', r.revokedAt ?? '-'].join('\t'),
        );
      }
    });

  token
    .command('revoke')
    .description(
      'revoke a token by its id; every server refuses it within 1 second. An unknown id, or a token already revoked, exits 1',
    )
    .argument('<id>', 'the id shown by token create --json or token list')
    .addOption(toOption(databaseSetting))
    .action(async (id: string, options: { database: string }) => {
      const outcome = await withStorage(options.database, async (s) => {
        // Told apart so that a script learns its revocation did not happen now (exit 1 either way).
        const earlier = (await s.listTokens()).find((record) => record.id === id)?.revokedAt;
        if (earlier) return { revokedBefore: earlier };
        return (await s.revokeToken(id, new Date())) ? 'revoked' : 'unknown';
      });
      if (typeof outcome === 'object') {
        process.stderr.write(
          `plant-store: token ${id} was already revoked, at ${outcome.revokedBefore.toISOString()}\n`,
        );
        process.exitCode = 1;
        return;
      }
      if (outcome === 'unknown') {
        // A secret pasted by mistake is not echoed: standard error ends up in logs too.
        const what = id.startsWith(TOKEN_PREFIX) ? 'that id (that is a secret: pass the tok_... id)' : `id ${id}`;
        process.stderr.write(`plant-store: no token with ${what}\n`);
        process.exitCode = 1;
        return;
      }
      print(`revoked ${id}`);
    });

  return token;
}
