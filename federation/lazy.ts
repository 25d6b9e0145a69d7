// Fedify, its vocabulary and JSON-LD contexts (~39 MB resident together) are loaded at their first use: the first
// ActivityPub request, delivery or remote look-up. A process that has not federated yet does not hold them.
import { createRequire } from 'node:module';
import type { Federation } from '@fedify/fedify';
import type { AppContext } from '../context.ts';

const require = createRequire(import.meta.url);

/**
 * Makes `ctx.federation` load and build the federation on first access. Synchronous (require of an ES module), so
 * that every user keeps reading `ctx.federation` as a plain property; the first access costs the loading, once.
 */
export function defineLazyFederation(ctx: AppContext): void {
  let federation: Federation<AppContext> | undefined;
  Object.defineProperty(ctx, 'federation', {
    configurable: true,
    enumerable: true,
    get: () => (federation ??= (require('./index.ts') as typeof import('./index.ts')).createAppFederation(ctx, ctx.federationQueue)),
  });
}
