import { createHash } from 'node:crypto';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

/**
 * GET /docs: Swagger UI, served from the package (no CDN), titled and branded Plant Store, loading
 * the same /openapi.json that clients use.
 */

/**
 * The one inline <style> Swagger UI writes: the one of its own logo, drawn in the top bar before
 * our logo replaces it. Allowed by its hash so the page logs no CSP error; after an upgrade of
 * @fastify/swagger-ui the browser test (test/docs/browser.test.ts) says if it has changed.
 */
const SWAGGER_LOGO_STYLE = '.logo_small_svg__cls-2{fill:#fff}.logo_small_svg__cls-3{fill:#85ea2d}';
const styleHash = `'sha256-${createHash('sha256').update(SWAGGER_LOGO_STYLE).digest('base64')}'`;

/** Helmet's policy for a page, narrowed: everything from this server, images also as data: URIs. */
const CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  `style-src 'self' ${styleHash}`,
].join('; ');

const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="190" height="40" viewBox="0 0 190 40">
<path d="M5 35C5 17 16 5 36 5C36 24 25 35 5 35Z" fill="#49cc90"/><path d="M7 33L28 12" stroke="#1b1b1b" stroke-width="2"/>
<text x="46" y="28" font-family="sans-serif" font-size="22" font-weight="700" fill="#fff">Plant Store</text></svg>`;

/** Swagger UI settings it reads from a URL; ones given there win over those of its initializer. */
const UI_CONFIG = '/docs/ui-config.json';

export async function docsPage(app: FastifyInstance) {
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: CSP,
    theme: { title: 'Plant Store API reference' },
    logo: { type: 'image/svg+xml', content: LOGO, href: '/docs', target: '_self' },
    uiConfig: { deepLinking: false, configUrl: UI_CONFIG },
  });
  // @fastify/swagger-ui always points the page at its own copy (/docs/json); the top bar shows
  // the one clients use instead.
  app.get(UI_CONFIG, { schema: { hide: true } }, async () => ({ url: '/openapi.json' }));
}
