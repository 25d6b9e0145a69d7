// Behind a transaction pooler (PgBouncer's pool_mode=transaction) each transaction, or each statement outside one,
// may run on a different PostgreSQL connection. node-postgres prepares a named statement once per connection and
// later only names it, so the pooler's next server connection answers "prepared statement ... does not exist".
// Unnamed statements are parsed, bound and run in one message batch, which a pooler keeps on one connection.
import type pg from 'pg';
import type { Db } from './db.ts';

type QueryFn = (...args: unknown[]) => unknown;

/** Strips the name from every query the client is asked to run: each one is planned anew, on whatever connection. */
export function unnamedStatements(client: pg.ClientBase): void {
  const query = client.query as unknown as QueryFn;
  (client as unknown as { query: QueryFn }).query = function (this: unknown, config: unknown, ...rest: unknown[]) {
    // A Submittable (a cursor or a pg.Query) carries its own protocol: passed as it is.
    if (config && typeof config === 'object' && typeof (config as { submit?: unknown }).submit !== 'function' && (config as { name?: unknown }).name) {
      const { name: _name, ...unnamed } = config as Record<string, unknown>;
      return query.call(this, unnamed, ...rest);
    }
    return query.call(this, config, ...rest);
  };
}

/**
 * Every connection of the pool, the ones it opens later included, runs named queries as unnamed ones
 * (PREPARED_STATEMENTS=false). pg-pool announces a connection ('connect') before handing it to anyone.
 */
export function withoutNamedStatements(db: Db): Db {
  db.on('connect', (client) => unnamedStatements(client));
  return db;
}
