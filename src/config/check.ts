import type { Config } from '../config.js';
import { ConfigError } from './setting.js';

/** Whether bearer JWTs are verified: a JWKS URL or a public key is set. */
export const jwtIsOn = (config: Pick<Config, 'jwtJwksUrl' | 'jwtPublicKey'>) =>
  config.jwtJwksUrl !== undefined || config.jwtPublicKey !== undefined;

/** The settings that cannot work together, refused before anything starts (exit 2). */
export function checkConfig(config: Config): Config {
  const jwtOn = jwtIsOn(config);
  if (config.jwtJwksUrl !== undefined && config.jwtPublicKey !== undefined) {
    throw new ConfigError('set either --jwt-jwks-url or --jwt-public-key, not both');
  }
  if (jwtOn && config.jwtAudience === undefined) {
    throw new ConfigError('JWTs are on but --jwt-audience (JWT_AUDIENCE) is not set; the audience must be checked');
  }
  if (!jwtOn && (config.jwtAudience !== undefined || config.jwtIssuer !== undefined)) {
    throw new ConfigError('--jwt-audience/--jwt-issuer need --jwt-jwks-url or --jwt-public-key');
  }
  if (config.databaseDirectUrl !== undefined && config.database.startsWith('sqlite:')) {
    throw new ConfigError('--database-direct-url is for PostgreSQL behind a pooler; --database is SQLite');
  }
  return config;
}
