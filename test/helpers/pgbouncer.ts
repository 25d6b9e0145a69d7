// A PgBouncer of the test's (or benchmark's) own: it lives in cli/ (npm run cluster:up starts one too).
export { PGBOUNCER, startPgBouncer, type PgBouncer, type PgBouncerOptions } from '../../cli/local-pgbouncer.ts';
