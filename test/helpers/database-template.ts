import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { migrate } from '../../storage/db.ts';
import { pgAnswers } from './pg-answers.ts';

/**
 * Vitest global set-up: one migrated database per version of the migrations, which every test database of the run is
 * copied from (`CREATE DATABASE … TEMPLATE`, a fraction of a second, where migrating afresh took 1–3 s a database),
 * and the run's databases dropped together at the end (a DROP DATABASE waits for a checkpoint: many at once take what
 * one alone does, where each test file waited for its own).
 *
 * The template's name carries a hash of the migrations, so it is kept from one run to the next and made again when a
 * migration changes; templates of older migrations are dropped. Workers learn the names through the environment,
 * set here before they are forked (as test/helpers/tls.ts does).
 */
const TCP_BASE_URL = 'postgres://postgres@127.0.0.1:5432';
/**
 * PostgreSQL's Unix socket, where it lets user postgres in (Debian's packages make it there; whether it lets us in is
 * pg_hba.conf's say): a query over it costs a quarter less CPU than over TCP on loopback, in this process and in the
 * server's, and the tests make some hundred thousand. TCP otherwise.
 */
const SOCKET_BASE_URL = 'postgres://postgres@%2Fvar%2Frun%2Fpostgresql';
/** Where the test databases are, chosen by `setup` (chooseBaseUrl). */
let baseUrl = TCP_BASE_URL;

/** The base URL of the test databases: TEST_DATABASE_BASE_URL, else the socket if it lets us in, else TCP on loopback. */
async function chooseBaseUrl(): Promise<string> {
  if (process.env.TEST_DATABASE_BASE_URL) return process.env.TEST_DATABASE_BASE_URL;
  return (await pgAnswers(`${SOCKET_BASE_URL}/postgres`)) ? SOCKET_BASE_URL : TCP_BASE_URL;
}
const migrationsDir = fileURLToPath(new URL('../../storage/migrations', import.meta.url));
/**
 * Drops at once at the end of the run. Each DROP discards its database's buffers and then waits for a checkpoint,
 * which writes out the buffers of every database not yet dropped: the more go together, the less is written for
 * nothing (30 copies of the template took 5.6 s ten at a time, 0.5 s all at once). Thirty leave PostgreSQL's default
 * hundred connections room for what else runs on the machine.
 */
const DROPS_AT_ONCE = 30;

function migrationsHash(): string {
  const hash = createHash('sha256');
  for (const name of readdirSync(migrationsDir).sort()) hash.update(name).update(readFileSync(`${migrationsDir}/${name}`));
  return hash.digest('hex').slice(0, 12);
}

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: `${baseUrl}/postgres` });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function databasesLike(client: pg.Client, pattern: string): Promise<string[]> {
  const { rows } = await client.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [pattern]);
  return rows.map((r) => r.datname);
}

async function dropAll(names: string[]): Promise<void> {
  const drop = (name: string) => withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`));
  const failed: string[] = [];
  for (let i = 0; i < names.length; i += DROPS_AT_ONCE) {
    const batch = names.slice(i, i + DROPS_AT_ONCE);
    const results = await Promise.allSettled(batch.map(drop));
    failed.push(...batch.filter((_, j) => results[j]!.status === 'rejected'));
  }
  // One at a time what failed together (connections short, say): an error now is a real one.
  for (const name of failed) await drop(name);
}

export default async function setup(): Promise<() => Promise<void>> {
  // Workers read it when they start (test/helpers/server.ts PG_BASE).
  baseUrl = await chooseBaseUrl();
  process.env.TEST_DATABASE_BASE_URL = baseUrl;
  const template = `fedi_tmpl_${migrationsHash()}`;
  await withAdmin(async (client) => {
    if ((await databasesLike(client, template)).length > 0) return;
    // Made under a name of its own and renamed when migrated: a run stopped half-way leaves no half-made template,
    // and two runs at once each make theirs (the second rename fails harmlessly).
    const making = `fedi_tmplnew_${randomBytes(4).toString('hex')}`;
    await client.query(`CREATE DATABASE ${making}`);
    await migrate(`${baseUrl}/${making}`);
    await client.query(`ALTER DATABASE ${making} RENAME TO ${template}`).catch(() => client.query(`DROP DATABASE ${making} WITH (FORCE)`));
  });
  // TEST_KEEP_TEMPLATES=1: several checkouts with different migrations testing at once against one PostgreSQL would
  // otherwise drop each other's templates in the middle of their runs.
  if (process.env.TEST_KEEP_TEMPLATES !== '1') await withAdmin(async (client) => {
    const stale = (await databasesLike(client, 'fedi_tmpl%')).filter((n) => n !== template && !n.startsWith('fedi_tmplnew_'));
    await dropAll(stale);
  });
  const run = randomBytes(3).toString('hex');
  process.env.TEST_DATABASE_TEMPLATE = template;
  process.env.TEST_RUN_ID = run;
  return async () => {
    await dropAll(await withAdmin((client) => databasesLike(client, `fedi_test_${run}_%`)));
  };
}
