import type { FastifyServerOptions } from 'fastify';
import fastJson, { type Options, type Schema } from 'fast-json-stringify';

type SerializerFactory = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer']
>;
type Serializer = (data: unknown) => string;

/** What a response schema says about the answer, not about its body: they do not change how the body is written. */
const ANNOTATIONS = ['description', 'examples', 'example', 'headers'];

/**
 * Fastify's serializer factory (`schemaController.compilersFactory.buildSerializer`), with one
 * serializer per distinct response body instead of one per route and status. Fastify compiles
 * each response of each route on its own, and most of them are the same `Error` body under another
 * description; the distinct bodies are few. Compiling each once per compiler Fastify asks for (it
 * asks again for the root context's routes) takes most of a start's compiling off every start (of
 * a server, and of each `--workers` process; bench/analysis.md, "what each optimisation is worth"). A serializer is a pure
 * function of its value, so routes can share one.
 */
export const sharedSerializers: SerializerFactory = (externalSchemas, serializerOpts) => {
  const options: Options = { ...serializerOpts, schema: externalSchemas as Options['schema'] };
  const compiled = new Map<string, Serializer>();
  return ({ schema }) => {
    const body = { ...(schema as Record<string, unknown>) };
    for (const annotation of ANNOTATIONS) delete body[annotation];
    const key = JSON.stringify(body, (_name, value) => (typeof value === 'bigint' ? `${value}n` : value));
    let serializer = compiled.get(key);
    if (serializer === undefined) {
      serializer = fastJson(schema as Schema, withoutItself(schema as Schema, options));
      compiled.set(key, serializer);
    }
    return serializer;
  };
};

/** As Fastify's own factory does: a schema whose `$id` is among the shared schemas is not given itself again. */
function withoutItself(schema: Schema, options: Options): Options {
  const id = (schema as { $id?: string }).$id;
  if (id === undefined || options.schema?.[id] === undefined) return options;
  const { [id]: _itself, ...others } = options.schema;
  return { ...options, schema: others };
}
