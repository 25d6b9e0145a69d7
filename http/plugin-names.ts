import type { FastifyInstance } from 'fastify';

const DISPLAY_NAME = Symbol.for('fastify.display-name');

/**
 * Gives every plugin registered on `app`, or on any instance it encapsulates (they inherit `register` from it), its
 * function's name as Fastify's display name. Without one, Fastify looks for the plugin's module by comparing it with
 * the exports of every module in `require.cache`, at each registration: about a hundred registrations an app.
 */
export function namePluginsOnRegister(app: FastifyInstance): void {
  const register = app.register;
  app.register = function (this: FastifyInstance, plugin: unknown, options?: unknown) {
    if (typeof plugin === 'function' && plugin.name !== '' && !(DISPLAY_NAME in plugin)) Object.defineProperty(plugin, DISPLAY_NAME, { value: plugin.name });
    return (register as (this: FastifyInstance, plugin: unknown, options?: unknown) => unknown).call(this, plugin, options);
  } as typeof register;
}
