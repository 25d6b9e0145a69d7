// Route schemas compiled at first use. Fastify compiles every route's validators (Ajv: generated JavaScript, one
// function per body, query string, params and headers schema) when the app starts, and a process keeps them all:
// ~1.6 MB of generated source with its compiled code, and Ajv itself. Most routes are never called in a
// process's life, or not for a while, so each validator is compiled on its route's first request instead (a few
// milliseconds, once). Ajv itself is loaded and made at start, as before.
// The compiler is Fastify's own (`@fastify/ajv-compiler`, with the options and plugins of the app's `ajv` setting),
// so validation, coercion, defaults and error messages are what they were. One difference: Fastify lowercases the
// property names of a `headers` schema only for its default compiler, so header names are written in lower case.
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

type Validate = ((data: unknown, dataCxt?: unknown) => unknown) & { errors?: unknown; schemaEnv?: unknown };
type RouteSchema = { schema: unknown; method?: string; url?: string; httpPart?: string };
type Compiler = (route: RouteSchema) => Validate;
type CompilerFactory = (externalSchemas: unknown, ajvOptions: unknown) => Compiler;
/** What Fastify's `schemaController.compilersFactory.buildValidator` setting takes. */
type ValidatorFactory = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>;

/** Fastify's own validator compiler factory, resolved from Fastify's package (the one it would load itself). */
function fastifyAjvCompiler(): () => CompilerFactory {
  const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
  return fromFastify('@fastify/ajv-compiler') as () => CompilerFactory;
}

/**
 * Validators already compiled in this process, by Ajv's options and shared schemas, then by the route's part and
 * schema: an app made again in the same process (the tests make hundreds) reuses them rather than compiling each
 * route's again (compiling was a tenth of the tests' CPU time). A validator is a function of its schema and the
 * options alone. Bounded by the routes' schemas, which are the code's.
 */
const compiledValidators = new Map<string, Map<string, Validate>>();

/** JSON of what a validator depends on; functions (Ajv's plugins) by name. */
const keyOf = (value: unknown) => JSON.stringify(value, (_key, v: unknown) => (typeof v === 'function' ? `function ${(v as { name: string }).name}` : v));

/**
 * A `schemaController.compilersFactory.buildValidator` for one Fastify instance (each gets its own, as Fastify's
 * default is made per instance): the validators it returns compile themselves at their first call.
 */
export function lazyValidatorFactory(): ValidatorFactory {
  const pool = fastifyAjvCompiler()();
  const factory: CompilerFactory = (externalSchemas, ajvOptions) => {
    // Ajv itself is made now, at start: loading it inside a request would hold the event loop for as long.
    const compiler = pool(externalSchemas, ajvOptions);
    const optionsKey = keyOf([externalSchemas, ajvOptions]);
    const compiled = compiledValidators.get(optionsKey) ?? new Map<string, Validate>();
    compiledValidators.set(optionsKey, compiled);
    return (route) => {
      let validate: Validate | undefined;
      const lazy: Validate = (data, dataCxt) => {
        if (!validate) {
          const routeKey = keyOf([route.httpPart, route.schema]);
          validate = compiled.get(routeKey);
          if (!validate) compiled.set(routeKey, (validate = compiler(route)));
        }
        const result = validate(data, dataCxt);
        lazy.errors = validate.errors;
        return result;
      };
      // Fastify passes the parent object (so that Ajv may coerce a root value) to validators that have this.
      lazy.schemaEnv = true;
      return lazy;
    };
  };
  return factory as unknown as ValidatorFactory;
}
