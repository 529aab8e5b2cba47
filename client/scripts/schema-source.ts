import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import { format, resolveConfig } from 'prettier';

/**
 * The TypeScript text of the types for an OpenAPI document, exactly as `client/src/schema.d.ts`
 * holds it (formatted with the repository's prettier settings, so formatting the tree leaves it
 * alone). One function, so that `npm run client:generate` and the drift test cannot disagree.
 */
export async function schemaSource(document: object): Promise<string> {
  const target = new URL('../src/schema.d.ts', import.meta.url);
  // A copy: openapiTS resolves $refs in place.
  const ast = await openapiTS(structuredClone(document) as Parameters<typeof openapiTS>[0]);
  const text = `${COMMENT_HEADER}// Regenerate with \`npm run client:generate\` (from the served /openapi.json); never edit by hand.\n\n${astToString(ast)}`;
  return format(text, { ...(await resolveConfig(target)), parser: 'typescript' });
}
