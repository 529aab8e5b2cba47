import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { HttpError } from '../errors.js';

/** Longest accepted webhook URL, in characters. */
export const MAX_URL_LENGTH = 2048;

/** How a host name becomes addresses; dns.lookup (the system resolver, as node:http uses) unless a test says otherwise. */
export type Resolver = (hostname: string, callback: (error: Error | null, addresses: LookupAddress[]) => void) => void;

const systemResolver: Resolver = (hostname, callback) => dnsLookup(hostname, { all: true }, callback);

/** A URL's host as an address when it is one: `[::1]` -> `::1`. */
function literalAddress(hostname: string): string | null {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) === 0 ? null : bare;
}

/**
 * The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`) or IPv4-compatible (`::a.b.c.d`,
 * deprecated by RFC 4291, classed by ipaddr.js as unicast whatever it holds) IPv6 address: such
 * an address is judged as the IPv4 address it carries.
 */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4 | null {
  const [a, b, c, d, e, f, high, low] = ip.parts as [number, number, number, number, number, number, number, number];
  const compatible = a === 0 && b === 0 && c === 0 && d === 0 && e === 0 && f === 0 && (high !== 0 || low > 1);
  if (!compatible && !ip.isIPv4MappedAddress()) return null;
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/** How an attempt's error begins when the guard refused the address (the deliveries listing shows it). */
export const NOT_ALLOWED = 'address not allowed: ';

export class AddressRefused extends Error {
  readonly code = 'EADDRNOTALLOWED';
}

/**
 * The SSRF guard. Without `allowPrivate`, webhooks go only to https URLs whose host is a global
 * unicast address: ipaddr.js classifies each address (IPv4, IPv6, and IPv4-mapped IPv6 as the
 * IPv4 address it maps), and every class but `unicast` is refused: loopback, private, unique-local,
 * link-local (cloud metadata at 169.254.169.254), CGNAT, unspecified, multicast, broadcast,
 * reserved, and the IPv6 forms that embed an IPv4 address (6to4, NAT64, Teredo).
 *
 * The check runs at registration and again at each attempt inside `lookup`, the resolver the
 * connection itself uses: the address checked is the address connected to, so a name that
 * resolves to a public address at registration and a private one later (DNS rebinding) is refused.
 */
export class AddressGuard {
  constructor(
    readonly allowPrivate: boolean,
    private readonly resolve: Resolver = systemResolver,
  ) {}

  /** Why `address` may not be connected to, or null when it may. */
  refusal(address: string): string | null {
    if (this.allowPrivate) return null;
    let ip: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      ip = ipaddr.parse(address);
    } catch {
      return `${address} is not an IP address`;
    }
    if (ip.kind() === 'ipv6') ip = embeddedIPv4(ip as ipaddr.IPv6) ?? ip;
    const range = ip.range();
    return range === 'unicast' ? null : `${address} is not a public address (${range})`;
  }

  /** For node:net (`lookup` of a connection): resolves, then refuses unless every address is allowed. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname, (error, addresses) => {
      const fail = (e: Error) => (options.all ? callback(e, []) : callback(e, '', 0));
      if (error) return fail(error);
      const wanted = addresses.filter((a) => !options.family || a.family === options.family);
      if (wanted.length === 0) return fail(new Error(`${hostname} has no address`));
      const refused = wanted.map((a) => this.refusal(a.address)).find((r) => r !== null);
      if (refused) return fail(new AddressRefused(NOT_ALLOWED + refused));
      if (options.all) callback(null, wanted);
      else callback(null, wanted[0]!.address, wanted[0]!.family);
    });
  };

  /** At each attempt, before connecting: what `lookup` cannot see (a URL whose host is an address). */
  refusalOfUrl(url: URL): string | null {
    if (!this.allowPrivate && url.protocol !== 'https:') return 'only https URLs are allowed';
    const literal = literalAddress(url.hostname);
    return literal === null ? null : this.refusal(literal);
  }

  /**
   * At registration: a 400 naming `url` unless the URL is https and its host resolves only to
   * allowed addresses. Every refused host gets one message, whether it is an address, a name that
   * resolves inside, or a name that does not resolve: the answer names the rule, never an address,
   * so that it cannot map internal names. The operator's log keeps the reason.
   */
  async checkUrl(text: string): Promise<void> {
    const url = new URL(text);
    if (!this.allowPrivate && url.protocol !== 'https:') throw badUrl('only https URLs are allowed');
    const refused = await this.hostRefusal(url.hostname);
    if (refused !== null) throw badUrl(HOST_RULE, `webhook url host ${url.hostname}: ${refused}`);
  }

  /** Why deliveries may not go to this host, for the log; null when they may. */
  private async hostRefusal(hostname: string): Promise<string | null> {
    if (this.allowPrivate) return null;
    const literal = literalAddress(hostname);
    if (literal !== null) return this.refusal(literal);
    const addresses = await new Promise<LookupAddress[]>((done) =>
      this.resolve(hostname, (error, found) => done(error ? [] : found)),
    );
    if (addresses.length === 0) return 'it cannot be resolved';
    return addresses.map((a) => this.refusal(a.address)).find((r) => r !== null) ?? null;
  }
}

/** The rule a refused host breaks, as the answer states it (the same for every refused host). */
const HOST_RULE = 'its host must be a public address, or a name that resolves only to public addresses';

/** Names the flag that lifts the rule, so a developer with a receiver on this machine finds it. */
function badUrl(rule: string, logReason?: string): HttpError {
  return new HttpError(
    400,
    `url is not allowed: ${rule}; webhooks go to public https addresses ` +
      '(for development only, the server can be started with --webhook-allow-private to allow http and private addresses)',
    {},
    logReason,
  );
}
