import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';
import ipaddr from 'ipaddr.js';
import { parseDuration } from './duration.js';

/** How each setting's text becomes its value; each throws commander's InvalidArgumentError, which --help style prints. */

export function integer(min: number, max: number) {
  return (text: string): number => {
    if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}`);
    }
    return Number(text);
  };
}

export function text(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('must not be empty');
  return value;
}

export function httpUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('expected an http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('expected an http(s) URL');
  return value;
}

export function databaseUrl(value: string): string {
  if (/^sqlite:.+/.test(value) || /^postgres(ql)?:\/\/.+/.test(value)) return value;
  throw new InvalidArgumentError('expected sqlite:PATH or postgres://...');
}

export function postgresUrl(value: string): string {
  if (/^postgres(ql)?:\/\/.+/.test(value)) return value;
  throw new InvalidArgumentError('expected postgres://...');
}

export function redisUrl(value: string): string {
  if (/^rediss?:\/\/.+/.test(value)) return value;
  throw new InvalidArgumentError('expected redis://HOST:PORT');
}

export function publicKeyFile(path: string): KeyObject {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch {
    throw new InvalidArgumentError(`cannot read ${path}`);
  }
  if (!pem.includes('-----BEGIN')) throw new InvalidArgumentError(`${path} is not a PEM file`);
  try {
    return createPublicKey(pem);
  } catch {
    throw new InvalidArgumentError(`${path} holds no usable public key`);
  }
}

/** One address or CIDR, written plainly: four decimal parts for IPv4 (`1.2.3` is refused), or IPv6. */
function isAddressOrCidr(text: string): boolean {
  return text.includes('/')
    ? ipaddr.IPv4.isValidCIDRFourPartDecimal(text) || ipaddr.IPv6.isValidCIDR(text)
    : ipaddr.IPv4.isValidFourPartDecimal(text) || ipaddr.IPv6.isValid(text);
}

/** Fastify's `trustProxy`: `true`, `false`, or comma-separated addresses/CIDRs of the proxies. */
export function trustProxy(value: string): boolean | string {
  if (value === 'true' || value === 'false') return value === 'true';
  const entries = value.split(',').map((entry) => entry.trim());
  const bad = entries.find((entry) => !isAddressOrCidr(entry));
  if (bad !== undefined) {
    throw new InvalidArgumentError(
      `"${bad}" is not an IP address or CIDR; expected true, false, or comma-separated addresses/CIDRs`,
    );
  }
  return entries.join(',');
}

export function onOff(value: string): boolean {
  if (['1', 'on', 'true'].includes(value)) return true;
  if (['0', 'off', 'false'].includes(value)) return false;
  throw new InvalidArgumentError('expected on or off (1/0, true/false)');
}

/** A duration (`45s`, `5m`, ...) from `min` to `max` milliseconds. */
export function durationWithin(min: number, max: number, range: string) {
  return (value: string): number => {
    const ms = parseDuration(value);
    if (ms < min || ms > max) throw new InvalidArgumentError(`expected a duration from ${range}`);
    return ms;
  };
}

/** Webhook retries: the wait before each retry, in order (`5s,5m,30m`); 1 to 20 of them. */
export function retrySchedule(value: string): number[] {
  const waits = value.split(',').map((part) => parseDuration(part.trim()));
  if (waits.length > 20) throw new InvalidArgumentError('expected at most 20 retries');
  return waits;
}

export const SQLITE_WRITERS = ['thread', 'inline'] as const;

export function sqliteWriter(value: string): (typeof SQLITE_WRITERS)[number] {
  const writer = SQLITE_WRITERS.find((w) => w === value);
  if (!writer) throw new InvalidArgumentError(`expected one of ${SQLITE_WRITERS.join(', ')}`);
  return writer;
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];

export function logLevel(value: string): LogLevel {
  const level = LOG_LEVELS.find((l) => l === value);
  if (!level) throw new InvalidArgumentError(`expected one of ${LOG_LEVELS.join(', ')}`);
  return level;
}

/** `0` (off) or a duration from 1 s to a year. */
export function durationOrOff(value: string): number {
  return value === '0' ? 0 : durationWithin(1_000, 31_536_000_000, '1s to 365d, or 0 for off')(value);
}

/** `0` (none) or a duration from 1 s to 10 minutes: how long a stop drains. */
export function drainDuration(value: string): number {
  return value === '0' ? 0 : durationWithin(1_000, 600_000, '1s to 10m, or 0 for none')(value);
}
