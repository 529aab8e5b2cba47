import { requireJsonBody } from '../http/intake.js';
import { TAGS } from '../http/route-docs.js';
import { ACCOUNT_RATE_LIMITED } from '../http/rate-limit.js';

/** What every /webhooks route shares: its tag, its scope and the account's rate limit, and a JSON body when it takes one. */
export const common = { tags: [TAGS.webhooks] };
export const route = { config: { ...ACCOUNT_RATE_LIMITED, scope: 'webhooks:manage' as const } };
export const withBody = { ...route, preParsing: requireJsonBody };
