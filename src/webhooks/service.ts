import { randomBytes } from 'node:crypto';
import { HttpError } from '../errors.js';
import type {
  WebhookDelivery as StoredDelivery,
  WebhookEndpoint as StoredEndpoint,
  WebhookStorage,
} from '../storage/types/webhooks.js';
import type { AddressGuard } from './address-guard.js';
import type {
  NewWebhookEndpoint,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointPatch,
  WebhookEndpointWithSecret,
} from './schemas.js';
import { newSecret } from './signer.js';

export const MAX_ENDPOINTS_PER_ACCOUNT = 16;
/** After a rotation, the replaced secret signs beside the new one for this long. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000;
export const DISABLED_REASON = 'the endpoint was disabled; recover the events after enabling it again';

function toView(endpoint: StoredEndpoint): WebhookEndpoint {
  return { ...endpoint, createdAt: endpoint.createdAt.toISOString() };
}

function toDeliveryView(delivery: StoredDelivery): WebhookDelivery {
  return {
    ...delivery,
    nextAttemptAt: delivery.nextAttemptAt?.toISOString() ?? null,
    createdAt: delivery.createdAt.toISOString(),
  };
}

/** Another account's endpoint and no endpoint at all answer alike. */
function noSuchEndpoint(id: string): HttpError {
  return new HttpError(404, `no webhook endpoint with id ${id}`);
}

/** The rules of the /webhooks API, above storage and below HTTP. Every call is within one account. */
export class WebhookService {
  constructor(
    private readonly storage: WebhookStorage,
    private readonly guard: AddressGuard,
  ) {}

  async create(account: string, input: NewWebhookEndpoint): Promise<WebhookEndpointWithSecret> {
    await this.guard.checkUrl(input.url);
    const endpoint = {
      account,
      id: 'ep_' + randomBytes(16).toString('base64url'),
      url: input.url,
      events: input.events ?? ['plant.created' as const],
      description: input.description ?? '',
      enabled: input.enabled ?? true,
      createdAt: new Date(),
      secret: newSecret(),
    };
    if (!(await this.storage.createEndpoint(endpoint, MAX_ENDPOINTS_PER_ACCOUNT))) {
      throw new HttpError(
        409,
        `an account has at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one to add another`,
      );
    }
    const { account: _, secret, ...stored } = endpoint;
    return { ...toView(stored), secret };
  }

  async list(account: string): Promise<WebhookEndpoint[]> {
    return (await this.storage.listEndpoints(account)).map(toView);
  }

  async get(account: string, id: string): Promise<WebhookEndpoint> {
    const endpoint = await this.storage.getEndpoint(account, id);
    if (endpoint === null) throw noSuchEndpoint(id);
    return toView(endpoint);
  }

  /** A new URL is checked as at registration; disabling fails the pending events (recover brings them back). */
  async update(account: string, id: string, patch: WebhookEndpointPatch): Promise<WebhookEndpoint> {
    if (patch.url !== undefined) await this.guard.checkUrl(patch.url);
    const endpoint = await this.storage.updateEndpoint(account, id, patch, DISABLED_REASON);
    if (endpoint === null) throw noSuchEndpoint(id);
    return toView(endpoint);
  }

  async remove(account: string, id: string): Promise<void> {
    if (!(await this.storage.deleteEndpoint(account, id))) throw noSuchEndpoint(id);
  }

  async rotateSecret(account: string, id: string): Promise<WebhookEndpointWithSecret> {
    const secret = newSecret();
    if (!(await this.storage.rotateSecret(account, id, secret, new Date(Date.now() + SECRET_OVERLAP_MS)))) {
      throw noSuchEndpoint(id);
    }
    return { ...(await this.get(account, id)), secret };
  }

  async deliveries(account: string, id: string, limit: number): Promise<WebhookDelivery[]> {
    await this.get(account, id);
    return (await this.storage.listDeliveries(account, id, limit)).map(toDeliveryView);
  }

  /** Failed events of the window become pending again, due now, with their original ids; how many. */
  async recover(account: string, id: string, since: Date, until: Date | undefined): Promise<number> {
    const endpoint = await this.get(account, id);
    if (!endpoint.enabled) throw new HttpError(409, 'the endpoint is disabled: enable it (PATCH) before recovering');
    return this.storage.requeueFailed(account, id, since, until ?? null, new Date());
  }
}
