import { randomBytes } from 'node:crypto';
import { untilAborted } from '../deadline.js';
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

/**
 * The rules of the /webhooks API, above storage and below HTTP. Every call is within one account;
 * its `deadline` is its request's (http/request-deadline.ts): its waits on the store end there, with its 503.
 */
export class WebhookService {
  constructor(
    private readonly storage: WebhookStorage,
    private readonly guard: AddressGuard,
  ) {}

  async create(
    account: string,
    input: NewWebhookEndpoint,
    deadline: AbortSignal | null,
  ): Promise<WebhookEndpointWithSecret> {
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
    if (!(await untilAborted(this.storage.createEndpoint(endpoint, MAX_ENDPOINTS_PER_ACCOUNT), deadline))) {
      throw new HttpError(
        409,
        `an account has at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one to add another`,
      );
    }
    const { account: _, secret, ...stored } = endpoint;
    return { ...toView(stored), secret };
  }

  async list(account: string, deadline: AbortSignal | null): Promise<WebhookEndpoint[]> {
    return (await untilAborted(this.storage.listEndpoints(account), deadline)).map(toView);
  }

  async get(account: string, id: string, deadline: AbortSignal | null): Promise<WebhookEndpoint> {
    const endpoint = await untilAborted(this.storage.getEndpoint(account, id), deadline);
    if (endpoint === null) throw noSuchEndpoint(id);
    return toView(endpoint);
  }

  /** A new URL is checked as at registration; disabling fails the pending events (recover brings them back). */
  async update(
    account: string,
    id: string,
    patch: WebhookEndpointPatch,
    deadline: AbortSignal | null,
  ): Promise<WebhookEndpoint> {
    if (patch.url !== undefined) await this.guard.checkUrl(patch.url);
    const endpoint = await untilAborted(this.storage.updateEndpoint(account, id, patch, DISABLED_REASON), deadline);
    if (endpoint === null) throw noSuchEndpoint(id);
    return toView(endpoint);
  }

  async remove(account: string, id: string, deadline: AbortSignal | null): Promise<void> {
    if (!(await untilAborted(this.storage.deleteEndpoint(account, id), deadline))) throw noSuchEndpoint(id);
  }

  async rotateSecret(account: string, id: string, deadline: AbortSignal | null): Promise<WebhookEndpointWithSecret> {
    const secret = newSecret();
    const rotated = this.storage.rotateSecret(account, id, secret, new Date(Date.now() + SECRET_OVERLAP_MS));
    if (!(await untilAborted(rotated, deadline))) throw noSuchEndpoint(id);
    return { ...(await this.get(account, id, deadline)), secret };
  }

  async deliveries(
    account: string,
    id: string,
    limit: number,
    deadline: AbortSignal | null,
  ): Promise<WebhookDelivery[]> {
    await this.get(account, id, deadline);
    return (await untilAborted(this.storage.listDeliveries(account, id, limit), deadline)).map(toDeliveryView);
  }

  /** Failed events of the window become pending again, due now, with their original ids; how many. */
  async recover(
    account: string,
    id: string,
    window: { since: Date; until: Date | undefined },
    deadline: AbortSignal | null,
  ): Promise<number> {
    const endpoint = await this.get(account, id, deadline);
    if (!endpoint.enabled) throw new HttpError(409, 'the endpoint is disabled: enable it (PATCH) before recovering');
    return untilAborted(
      this.storage.requeueFailed(account, id, window.since, window.until ?? null, new Date()),
      deadline,
    );
  }
}
