// A PgBouncer of the test's (or benchmark's) own: it lives in cli/ (npm run cluster:up starts one too).
import { PGBOUNCER } from '../../cli/local-pgbouncer.ts';
import { requireProgram } from './programs.ts';

export { PGBOUNCER, startPgBouncer, type PgBouncer, type PgBouncerOptions } from '../../cli/local-pgbouncer.ts';

/** Debian's pgbouncer, or a one-line failure naming the package. */
export function requirePgBouncer(): string {
  return requireProgram(PGBOUNCER ?? '/usr/sbin/pgbouncer', 'pgbouncer', 'pgbouncer');
}
