import { afterAll, describe, expect, it } from 'vitest';
import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PG_BASE, dropTestDatabase, testDatabaseName } from '../helpers/server.ts';
import { ensureDatabase, migrate } from '../../storage/db.ts';

// Migrations are applied by a child process (storage/migrate-process.ts), so that the server never keeps
// node-pg-migrate loaded; what it applies, and how it fails, are as if run in the caller.
const made: string[] = [];
const database = async (name: string) => {
  const url = `${PG_BASE}/${testDatabaseName(`migrate_${name}`)}`;
  made.push(url);
  await ensureDatabase(url);
  return url;
};
const query = async <T extends pg.QueryResultRow>(url: string, text: string) => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
};

afterAll(async () => {
  await Promise.all(made.map((url) => dropTestDatabase(url).catch(() => {})));
});

describe('migrate', () => {
  it('applies every migration to a new database, once, and then has nothing to do', async () => {
    const url = await database('fresh');
    await migrate(url);
    const files = (await readdir(fileURLToPath(new URL('../../storage/migrations', import.meta.url)))).filter((f) => f.endsWith('.sql')).map((f) => f.replace(/\.sql$/, ''));
    const applied = (await query<{ name: string }>(url, 'SELECT name FROM pgmigrations ORDER BY id')).map((r) => r.name);
    expect(applied).toEqual(files.sort());
    await migrate(url); // all applied: not even a child process
    expect((await query<{ n: number }>(url, 'SELECT count(*)::int AS n FROM pgmigrations'))[0]!.n).toBe(files.length);
  });

  it('throws the failing migration\'s error and applies nothing of it', async () => {
    const url = await database('clash');
    // A table in the way of the first migration's.
    await query(url, 'CREATE TABLE accounts (x int)');
    await expect(migrate(url)).rejects.toThrow(/^migrations failed: .*accounts.* already exists/);
    // One transaction for the whole run: nothing recorded, nothing made (but node-pg-migrate's own table).
    expect((await query<{ n: number }>(url, `SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('accounts', 'pgmigrations')`))[0]!.n).toBe(0);
    expect((await query<{ n: number }>(url, 'SELECT count(*)::int AS n FROM pgmigrations'))[0]!.n).toBe(0);
  });
});
