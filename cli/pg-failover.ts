// Fails PostgreSQL over to its streaming standby behind PgBouncer: promotes the standby (`pg_ctl promote`), points
// PgBouncer's [databases] lines at it and reloads PgBouncer. The server processes keep running: their connections
// go to PgBouncer, which opens its new server connections to the promoted standby.
//
//   npm run cluster:failover -- --standby-data /var/lib/postgresql/15/main --standby-host 10.0.0.6 \
//     --pgbouncer-ini /etc/pgbouncer/pgbouncer.ini --pgbouncer-admin postgres://pgbouncer@127.0.0.1:6432/pgbouncer \
//     [--standby-port 5432] [--old-primary 10.0.0.5:5432] [--pg-bin DIR (default PG_BIN, else the installed PostgreSQL's)]
//
// Run it where PgBouncer's ini is; --standby-data (the standby's data directory, where its PG_VERSION is) only where
// that directory is too (on several machines, promote there with `pg_ctl promote` or `SELECT pg_promote()` and leave
// --standby-data out). For a set-up of `npm run cluster:up`, `npm run cluster:failover -- [--dir ./cluster-data]`
// takes all of these from its cluster.json. Before
// running it, make sure the old primary is stopped and stays stopped (fence it): started again, it would take writes
// the new primary never sees. It comes back only as a new standby (pg_rewind or a fresh pg_basebackup).
import { execFile } from 'node:child_process';
import { chmod, chown, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import pg from 'pg';
import { STATE_FILE, failoverOptionsOf, loadState } from './cluster-state.ts';
import { pgBin } from './local-postgres.ts';

const run = promisify(execFile);

export interface Endpoint {
  host: string;
  port: number;
}

export interface FailoverOptions {
  /** The standby's data directory, promoted with `pg_ctl promote`; left out when it was promoted elsewhere. */
  standbyDataDir?: string;
  /** Where PgBouncer reaches the standby. */
  standby: Endpoint;
  /** PgBouncer's ini: the [databases] lines pointing at the old primary (every line, without `oldPrimary`) change. */
  pgbouncerIni: string;
  /** PgBouncer's admin console (a user in `admin_users`, database `pgbouncer`), where RELOAD is sent. */
  pgbouncerAdminUrl: string;
  /** The failed primary: only the lines naming it are rewritten (others may point at other clusters). */
  oldPrimary?: Endpoint;
  /** PostgreSQL's programs (pg_ctl). */
  pgBin?: string;
  log?: (msg: string) => void;
}

export interface FailoverResult {
  /** The [databases] entries now pointing at the standby. */
  databases: string[];
  /** The databases whose PgBouncer pools were restarted (KILL, RESUME): the named ones and those made from `*`. */
  restartedPools: string[];
  promoteMs: number;
  totalMs: number;
}

export async function failOver(options: FailoverOptions): Promise<FailoverResult> {
  const log = options.log ?? (() => {});
  const started = performance.now();
  if (options.standbyDataDir) {
    await promote(options.standbyDataDir, options.pgBin ?? pgBin());
    log(`promoted ${options.standbyDataDir}`);
  }
  const promoteMs = performance.now() - started;
  const killed: string[] = [];
  const ini = await readFile(options.pgbouncerIni, 'utf8');
  const { text, databases, entries } = pointDatabasesAt(ini, options.standby, options.oldPrimary);
  // The pools that moved: the named entries, and with `*` every database made from it (listed, not named in the ini).
  const moved = (name: string) => databases.includes(name) || (databases.includes('*') && !entries.includes(name));
  if (databases.length === 0) throw new Error(`no [databases] line of ${options.pgbouncerIni} points at ${options.oldPrimary ? `${options.oldPrimary.host}:${options.oldPrimary.port}` : 'a host'}`);
  if (text !== ini) await replaceFile(options.pgbouncerIni, text);
  log(`${options.pgbouncerIni}: ${databases.join(', ')} -> ${options.standby.host}:${options.standby.port}`);
  await onAdminConsole(options.pgbouncerAdminUrl, async (adminConsole) => {
    // RELOAD: PgBouncer takes the changed connection strings; a server connection to the old host would be closed
    // when next released, and new ones go to the new host (RECONNECT is not needed after a reload).
    await adminConsole.query('RELOAD');
    // But PgBouncer remembers its failed logins to the old primary: for server_login_retry (15 s by default) it fails
    // clients at once without trying the new host, and the reload does not clear that. KILL discards each pool of the
    // moved databases (and the memory of those failures) and drops its client connections, which were failing anyway
    // and which node-postgres pools open again; RESUME takes new clients at once.
    const { rows } = await adminConsole.query<{ name: string; host: string | null; port: number | string }>('SHOW DATABASES');
    for (const db of rows) {
      if (db.name === 'pgbouncer' || !moved(db.name)) continue;
      try {
        await adminConsole.query(`KILL ${pg.escapeIdentifier(db.name)}`);
      } finally {
        await adminConsole.query(`RESUME ${pg.escapeIdentifier(db.name)}`);
      }
      killed.push(db.name);
    }
  });
  log(`pgbouncer reloaded; pools restarted: ${killed.join(', ') || 'none'}`);
  return { databases, restartedPools: killed, promoteMs, totalMs: performance.now() - started };
}

/** `pg_ctl promote -w`: returns once the standby accepts writes. A standby already promoted is fine (a re-run). */
async function promote(dataDir: string, pgBin: string): Promise<void> {
  // pg_ctl refuses to run as root: as root, it runs as the data directory's owner.
  const owner = process.getuid?.() === 0 ? await stat(dataDir) : null;
  try {
    await run(join(pgBin, 'pg_ctl'), ['promote', '-w', '-t', '60', '-D', dataDir], owner ? { uid: owner.uid, gid: owner.gid } : {});
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    if (/not in standby mode/.test(e.stderr ?? '')) return;
    throw new Error(`pg_ctl promote failed: ${(e.stderr ?? e.message).trim()}`, { cause: err });
  }
}

/**
 * The ini with each [databases] entry that points at `from` (or every entry) pointing at `to` instead: its `host`
 * and `port` replaced, added when missing. Everything else (comments, other keys, other sections) is kept as it is.
 */
export function pointDatabasesAt(ini: string, to: Endpoint, from?: Endpoint): { text: string; databases: string[]; entries: string[] } {
  const databases: string[] = [];
  const entries: string[] = [];
  let section = '';
  const lines = ini.split('\n').map((line) => {
    const header = /^\s*\[([^\]]+)\]/.exec(line);
    if (header) section = header[1]!.trim().toLowerCase();
    const entry = /^(\s*)([^=;#\s][^=]*?)(\s*=\s*)(.*?)(\s*)$/.exec(line);
    if (header || section !== 'databases' || !entry) return line;
    const [, indent, name, eq, connstr, trailing] = entry;
    entries.push(name!);
    const params = parseConnstr(connstr!);
    if (from) {
      const host = params.get('host') ?? '';
      const port = Number(params.get('port') ?? 5432);
      if (host !== from.host || port !== from.port) return line;
    }
    params.set('host', to.host);
    params.set('port', String(to.port));
    databases.push(name!);
    return `${indent}${name}${eq}${[...params].map(([k, v]) => `${k}=${quote(v)}`).join(' ')}${trailing}`;
  });
  return { text: lines.join('\n'), databases, entries };
}

/** PgBouncer's connection string: `key=value` pairs, a value in single quotes when it has spaces. */
function parseConnstr(connstr: string): Map<string, string> {
  const params = new Map<string, string>();
  for (const m of connstr.matchAll(/([A-Za-z_][\w]*)\s*=\s*('(?:[^'\\]|\\.|'')*'|\S*)/g)) {
    const raw = m[2]!;
    params.set(m[1]!, raw.startsWith("'") ? raw.slice(1, -1).replace(/''|\\'/g, "'") : raw);
  }
  return params;
}

function quote(value: string): string {
  return /^[^\s']+$/.test(value) ? value : `'${value.replace(/'/g, "''")}'`;
}

/** Written next to the old file and renamed over it, with its owner and mode: PgBouncer never reads half a file. */
async function replaceFile(path: string, text: string): Promise<void> {
  const before = await stat(path);
  const temporary = `${path}.failover-${process.pid}`;
  await writeFile(temporary, text);
  await chmod(temporary, before.mode & 0o7777);
  if (process.getuid?.() === 0) await chown(temporary, before.uid, before.gid);
  await rename(temporary, path);
}

/** Commands on PgBouncer's admin console (simple query protocol, which is all it speaks). */
async function onAdminConsole(url: string, fn: (client: pg.Client) => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  await client.connect();
  try {
    await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

function endpoint(value: string, what: string): Endpoint {
  const m = /^(.+):(\d+)$/.exec(value);
  if (!m) throw new Error(`${what}: expected host:port, got ${value}`);
  return { host: m[1]!, port: Number(m[2]) };
}

/**
 * The options of the command line. A set-up of `npm run cluster:up` is found by its cluster.json (`--dir`, or
 * ./cluster-data when no PostgreSQL or PgBouncer flag is given): its replica's data directory, ports and PgBouncer,
 * each overridden by a flag given.
 */
export function failoverOptionsFromArgs(argv: string[]): FailoverOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      dir: { type: 'string' },
      'standby-data': { type: 'string' },
      'standby-host': { type: 'string' },
      'standby-port': { type: 'string' },
      'pgbouncer-ini': { type: 'string' },
      'pgbouncer-admin': { type: 'string' },
      'old-primary': { type: 'string' },
      'pg-bin': { type: 'string' },
    },
  });
  const flagged = (['standby-data', 'standby-host', 'standby-port', 'pgbouncer-ini', 'pgbouncer-admin', 'old-primary'] as const).some((k) => values[k] !== undefined);
  const dir = values.dir ?? (flagged ? undefined : './cluster-data');
  const state = dir === undefined ? null : loadState(resolve(dir));
  if (values.dir !== undefined && !state) throw new Error(`--dir ${values.dir}: no ${STATE_FILE} there (made by npm run cluster:up)`);
  const local = state ? failoverOptionsOf(state) : undefined;
  const standbyHost = values['standby-host'] ?? local?.standby.host;
  const missing = [
    ...(standbyHost ? [] : ['--standby-host']),
    ...(values['pgbouncer-ini'] ?? local?.pgbouncerIni ? [] : ['--pgbouncer-ini']),
    ...(values['pgbouncer-admin'] ?? local?.pgbouncerAdminUrl ? [] : ['--pgbouncer-admin']),
  ];
  if (missing.length > 0) throw new Error(`missing ${missing.join(', ')} (see the top of cli/pg-failover.ts)`);
  return {
    standbyDataDir: values['standby-data'] ?? local?.standbyDataDir,
    standby: { host: standbyHost!, port: values['standby-port'] ? Number(values['standby-port']) : (local?.standby.port ?? 5432) },
    pgbouncerIni: values['pgbouncer-ini'] ?? local!.pgbouncerIni,
    pgbouncerAdminUrl: values['pgbouncer-admin'] ?? local!.pgbouncerAdminUrl,
    oldPrimary: values['old-primary'] ? endpoint(values['old-primary'], '--old-primary') : local?.oldPrimary,
    pgBin: values['pg-bin'],
  };
}

async function main(): Promise<void> {
  const result = await failOver({ ...failoverOptionsFromArgs(process.argv.slice(2)), log: (msg) => console.info(msg) });
  console.info(`failed over in ${result.totalMs.toFixed(0)} ms (promotion ${result.promoteMs.toFixed(0)} ms)`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: Error) => {
    console.error(`pg-failover: ${err.message}`);
    process.exit(1);
  });
}
