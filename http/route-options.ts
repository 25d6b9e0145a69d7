import type { AppContext } from '../context.ts';

/** Route modules are plugins taking the shared context. */
export interface RouteOptions {
  ctx: AppContext;
}
