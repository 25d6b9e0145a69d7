// Applies the pending migrations of MIGRATE_DATABASE_URL and exits: the child process of storage/db.ts `migrate`, so
// that the server itself never loads node-pg-migrate. An error goes to stderr, its message last (what `migrate` throws).
import { runMigrations } from './db.ts';

try {
  await runMigrations(process.env.MIGRATE_DATABASE_URL ?? '');
} catch (err) {
  if ((err as Error).stack) console.error((err as Error).stack);
  console.error(String((err as Error).message ?? err).split('\n').filter((l) => l.trim() !== '').at(-1) ?? 'failed');
  process.exit(1);
}
process.exit(0);
