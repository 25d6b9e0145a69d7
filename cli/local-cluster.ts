// One instance as many processes, all on loopback with the machine's programs, for an operator (or a benchmark) to
// try the set-up large instances run: two web, two worker and two streaming processes (the server as `npm start`
// runs it: cli/start-command.ts) on a Redis Cluster of 3 masters with a replica each, and a PostgreSQL primary with one
// streaming replica, PgBouncer in transaction mode in front of the primary.
//
//   npm run cluster:up -- [--dir ./cluster-data] [--base-port 4000] [--domain 127.0.0.1:4000]
//   npm run cluster:down -- [--dir ./cluster-data] [--remove]
//   npm run cluster:failover -- [--dir ./cluster-data]    (cli/pg-failover.ts: promotes the replica once the primary is stopped)
//
// Ports: web base and base+1, streaming base+2 and base+3, Redis base+10…base+15, PostgreSQL base+20 (primary) and
// base+21 (replica), PgBouncer base+22. Everything (data, logs, the state file cluster.json) is in --dir. Every
// process is detached: it keeps running after `up` returns, and `down` finds it again in the state file. Settings
// other than the ones set here (LOG_LEVEL, OTP_SECRET, SMTP_URL…) come from the environment `up` runs in.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { RedisCluster } from './redis-cluster.ts';
import { OwnPostgres, pgBin } from './local-postgres.ts';
import { findPgBouncer, startPgBouncer } from './local-pgbouncer.ts';
import { startCommand } from './start-command.ts';
import { STATE_FILE, loadState, saveState, statePath, type ClusterState, type ServerProcess } from './cluster-state.ts';

const run = promisify(execFile);
const DATABASE = 'fedi_server';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether `pid` runs a program whose command line contains `needle` (a pid reused by another program is not ours). */
function alive(pid: number | null | undefined, needle: string): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // A zombie, or another program under a reused pid, has another (or an empty) command line.
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(needle);
  } catch {
    return !existsSync('/proc/self');
  }
}

/** Every process of the state that still runs, as [pid, what]. */
async function liveProcesses(state: ClusterState): Promise<[number, string][]> {
  const live: [number, string][] = [];
  for (const p of state.processes) if (alive(p.pid, 'main.ts')) live.push([p.pid, `${p.role} server`]);
  if (alive(state.pgbouncer?.pid, 'pgbouncer')) live.push([state.pgbouncer!.pid!, 'pgbouncer']);
  for (const [name, pg] of Object.entries(state.postgres)) {
    const pid = pg ? await OwnPostgres.at(pg.dir, pg.port).postmasterPid() : null;
    if (alive(pid, 'postgres')) live.push([pid!, `postgres ${name}`]);
  }
  for (const pid of redisPids(state)) if (alive(pid, 'redis-server')) live.push([pid, 'redis-server']);
  return live;
}

/** The Redis nodes' pids, from their pid files (each node removes its own when it stops). */
function redisPids(state: ClusterState): number[] {
  if (!state.redis) return [];
  return state.redis.ports
    .map((port) => Number((() => { try { return readFileSync(join(state.redis!.dir, String(port), 'redis.pid'), 'utf8'); } catch { return '0'; } })()))
    .filter((pid) => pid > 0);
}

/** Until none of `pids` runs `needle` (true), or `ms` passed (false). */
async function gone(pids: number[], needle: string, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (pids.some((pid) => alive(pid, needle))) {
    if (Date.now() > end) return false;
    await sleep(100);
  }
  return true;
}

/** SIGTERM, then SIGKILL for what still runs after `ms`. */
async function terminate(pids: number[], needle: string, ms = 5000): Promise<void> {
  const ours = pids.filter((pid) => alive(pid, needle));
  for (const pid of ours) process.kill(pid, 'SIGTERM');
  if (await gone(ours, needle, ms)) return;
  for (const pid of ours) if (alive(pid, needle)) process.kill(pid, 'SIGKILL');
  await gone(ours, needle, 2000);
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

async function onPath(program: string): Promise<boolean> {
  return run('sh', ['-c', `command -v ${program}`]).then(() => true, () => false);
}

/** Debian's pgbouncer, installed when missing (as .ci/run does). */
async function ensurePgBouncer(): Promise<void> {
  if (findPgBouncer()) return;
  if (process.getuid?.() !== 0) throw new Error('pgbouncer is not installed: install it (sudo apt-get install -y pgbouncer) and run this again');
  console.log("PgBouncer is missing; installing Debian's package (apt-get install -y pgbouncer)");
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update', '-qq'], ['install', '-y', '-qq', 'pgbouncer']]) {
    const code = await new Promise<number | null>((resolve) => spawn('apt-get', args, { env, stdio: ['ignore', 'inherit', 'inherit'] }).once('exit', resolve));
    if (code !== 0) throw new Error(`apt-get ${args.join(' ')} failed (exit ${code})`);
  }
  if (!findPgBouncer()) throw new Error('apt-get installed pgbouncer, but it is not at /usr/sbin/pgbouncer');
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** The server in the given role as `npm start` runs it (cli/start-command.ts), detached, logging to a file of its own. */
function startServer(state: ClusterState, role: ServerProcess['role'], n: number, port: number | null): ChildProcess {
  const log = join(state.dir, 'logs', `${role}-${n}.log`);
  const fd = openSync(log, 'a');
  const start = startCommand();
  const env: Record<string, string | undefined> = {
    ...process.env,
    ...start.env,
    ...state.settings,
    ROLE: role,
    PORT: port === null ? undefined : String(port),
  };
  const child = spawn(process.execPath, [...start.nodeFlags, start.script], { cwd: start.cwd, env, detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  child.unref();
  state.processes.push({ role, port, pid: child.pid!, log });
  saveState(state);
  return child;
}

/** Until the process answers GET /health with 200 (throws with its log's end if it exits or `ms` pass). */
async function healthy(child: ChildProcess, port: number, log: string, ms: number): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the process on port ${port} exited (${child.signalCode ?? child.exitCode}); the end of ${log}:\n${tail(log)}`);
    const status = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status, () => 0);
    if (status === 200) return;
    if (Date.now() > end) throw new Error(`the process on port ${port} was not healthy after ${ms / 1000} s; the end of ${log}:\n${tail(log)}`);
    await sleep(200);
  }
}

async function up(dir: string, basePort: number, domain: string | undefined): Promise<void> {
  const existing = loadState(dir);
  if (existing) {
    const live = await liveProcesses(existing);
    if (live.length > 0) {
      throw new Error(`a cluster is already running from ${dir} (${live.map(([pid, what]) => `${what} ${pid}`).join(', ')}).\n` +
        `Stop it first: npm run cluster:down -- --dir ${dir}`);
    }
    throw new Error(`${dir} holds the data of a stopped cluster (starting again from it is not supported).\n` +
      `Delete it with: npm run cluster:down -- --dir ${dir} --remove (or choose another --dir)`);
  }
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new Error(`${dir} is not empty: choose an empty or new --dir`);
  if (!Number.isInteger(basePort) || basePort < 1024 || basePort + 22 > 65535) throw new Error(`--base-port must be a port from 1024 to 65513, not ${basePort}`);

  for (const program of ['redis-server', 'redis-cli']) if (!(await onPath(program))) throw new Error(`${program} is not installed (apt-get install -y redis-server)`);
  if (!existsSync(join(pgBin(), 'initdb'))) throw new Error(`PostgreSQL's programs are not in ${pgBin()} (set PG_BIN)`);
  await ensurePgBouncer();
  const ports = {
    web: [basePort, basePort + 1],
    streaming: [basePort + 2, basePort + 3],
    redis: [0, 1, 2, 3, 4, 5].map((i) => basePort + 10 + i),
    primary: basePort + 20,
    replica: basePort + 21,
    pgbouncer: basePort + 22,
  };
  const all = [...ports.web, ...ports.streaming, ...ports.redis, ports.primary, ports.replica, ports.pgbouncer];
  const taken = [];
  for (const port of all) if (!(await portFree(port))) taken.push(port);
  if (taken.length > 0) throw new Error(`port${taken.length > 1 ? 's' : ''} ${taken.join(', ')} already in use on 127.0.0.1: choose another --base-port`);

  mkdirSync(join(dir, 'logs'), { recursive: true });
  // PostgreSQL and PgBouncer run as postgres when this runs as root: they must reach their directories.
  if (process.getuid?.() === 0 && !(await run('runuser', ['-u', 'postgres', '--', 'test', '-x', dir]).then(() => true, () => false))) {
    throw new Error(`the postgres user cannot reach ${dir} (PostgreSQL runs as postgres): choose a --dir under /tmp, say`);
  }
  const state: ClusterState = { dir, basePort, startedAt: new Date().toISOString(), settings: {}, postgres: {}, processes: [] };
  saveState(state);
  try {
    console.log(`Starting a Redis Cluster (3 masters, 3 replicas) on ${ports.redis[0]}–${ports.redis.at(-1)} and PostgreSQL on ${ports.primary}…`);
    state.redis = { dir: join(dir, 'redis'), ports: ports.redis };
    state.postgres.primary = { dir: join(dir, 'postgres-primary'), port: ports.primary };
    saveState(state);
    // PgBouncer holds 20 server connections, but replica reads (a pool of DATABASE_POOL_SIZE, 20, in each web and
    // streaming process) and migrations go straight to PostgreSQL.
    const maxConnections = 200;
    // Both settled before going on: a failure must not leave the other still starting while it is cleaned up.
    const [redisStarted, primaryStarted] = await Promise.allSettled([
      RedisCluster.start({ masters: 3, replicasPerMaster: 1, dir: state.redis.dir, ports: ports.redis, detached: true }),
      OwnPostgres.start({ dir: state.postgres.primary.dir, port: ports.primary, maxConnections }),
    ]);
    if (redisStarted.status === 'rejected') throw redisStarted.reason;
    if (primaryStarted.status === 'rejected') throw primaryStarted.reason;
    const [redis, primary] = [redisStarted.value, primaryStarted.value];
    console.log(`Starting PostgreSQL's streaming replica on ${ports.replica} and PgBouncer on ${ports.pgbouncer}…`);
    state.postgres.replica = { dir: join(dir, 'postgres-replica'), port: ports.replica };
    saveState(state);
    const replica = await primary.startReplica({ dir: state.postgres.replica.dir, port: ports.replica, maxConnections });
    state.pgbouncer = { dir: join(dir, 'pgbouncer'), port: ports.pgbouncer };
    saveState(state);
    const bouncer = await startPgBouncer({ backend: { host: '127.0.0.1', port: primary.port }, poolSize: 20, dir: state.pgbouncer.dir, port: ports.pgbouncer, detached: true });
    state.pgbouncer.pid = bouncer.pid;
    state.settings = {
      LOCAL_DOMAIN: domain ?? `127.0.0.1:${basePort}`,
      DATABASE_URL: bouncer.url(DATABASE),
      DATABASE_DIRECT_URL: primary.url(DATABASE),
      DATABASE_REPLICA_URL: replica.url(DATABASE),
      PREPARED_STATEMENTS: 'false',
      REDIS_CLUSTER_NODES: redis.seeds,
      // On a cluster only its connection options count (password, TLS): the nodes are REDIS_CLUSTER_NODES.
      REDIS_URL: `redis://127.0.0.1:${ports.redis[0]}`,
      DATA_DIR: join(dir, 'data'),
    };
    saveState(state);

    // The first web process creates the database and migrates it; the others start once it has.
    console.log(`Starting web 1 on ${ports.web[0]} (it creates and migrates the database)…`);
    const first = startServer(state, 'web', 1, ports.web[0]!);
    await healthy(first, ports.web[0]!, state.processes[0]!.log, 120_000);
    console.log('Starting web 2, two workers and two streaming processes…');
    const web2 = startServer(state, 'web', 2, ports.web[1]!);
    const workers = [startServer(state, 'worker', 1, null), startServer(state, 'worker', 2, null)];
    const streaming = ports.streaming.map((port, i) => startServer(state, 'streaming', i + 1, port));
    const log = (child: ChildProcess) => state.processes.find((p) => p.pid === child.pid)!.log;
    await Promise.all([
      healthy(web2, ports.web[1]!, log(web2), 60_000),
      ...streaming.map((child, i) => healthy(child, ports.streaming[i]!, log(child), 60_000)),
    ]);
    // Workers listen on no port: they are up while they run.
    for (const w of workers) {
      if (w.exitCode !== null || w.signalCode !== null) throw new Error(`a worker exited (${w.signalCode ?? w.exitCode}); the end of ${log(w)}:\n${tail(log(w))}`);
    }
  } catch (err) {
    console.error(`Cannot start: ${err instanceof Error ? err.message : String(err)}`);
    console.error('Stopping what had started…');
    await down(dir, false, true).catch((e: unknown) => console.error(e instanceof Error ? e.message : e));
    console.error(`Logs and data are kept in ${dir}; npm run cluster:down -- --dir ${dir} --remove deletes them.`);
    process.exit(1);
  }

  const s = state.settings;
  console.log(`
Up: one instance, ${s.LOCAL_DOMAIN}, as six processes (pids and everything else in ${statePath(dir)}).
  web         http://127.0.0.1:${ports.web[0]}  http://127.0.0.1:${ports.web[1]}
  streaming   ws://127.0.0.1:${ports.streaming[0]}/api/v1/streaming  ws://127.0.0.1:${ports.streaming[1]}/api/v1/streaming
  workers     2 (ROLE=worker, no port)
  logs        ${join(dir, 'logs')}/{web,worker,streaming}-{1,2}.log
  PostgreSQL  primary ${s.DATABASE_DIRECT_URL}, replica ${s.DATABASE_REPLICA_URL}
  PgBouncer   ${s.DATABASE_URL} (transaction mode; admin: psql postgres://postgres@127.0.0.1:${ports.pgbouncer}/pgbouncer)
  Redis       ${s.REDIS_CLUSTER_NODES} (redis-cli -c -p ${ports.redis[0]})

The settings every process has (besides ROLE and PORT), for another process of the same instance:
${Object.entries(s).map(([k, v]) => `${k}=${v}`).join('\n')}

Fail PostgreSQL over to its replica (once the primary is stopped): npm run cluster:failover -- --dir ${dir}
Stop it all with: npm run cluster:down -- --dir ${dir} [--remove]`);
}

async function down(dir: string, remove: boolean, quiet = false): Promise<void> {
  const state = loadState(dir);
  if (!state) throw new Error(`no cluster in ${dir} (no ${STATE_FILE}): nothing to stop`);
  const say = (msg: string) => { if (!quiet) console.log(msg); };
  const servers = state.processes.filter((p) => alive(p.pid, 'main.ts'));
  if (servers.length > 0) say(`Stopping ${servers.length} server process${servers.length > 1 ? 'es' : ''}…`);
  await terminate(servers.map((p) => p.pid), 'main.ts');
  if (state.pgbouncer?.pid && alive(state.pgbouncer.pid, 'pgbouncer')) {
    say('Stopping PgBouncer…');
    await terminate([state.pgbouncer.pid], 'pgbouncer');
  }
  for (const name of ['replica', 'primary'] as const) {
    const pg = state.postgres[name];
    if (!pg) continue;
    const cluster = OwnPostgres.at(pg.dir, pg.port);
    if (!alive(await cluster.postmasterPid(), 'postgres')) continue;
    say(`Stopping PostgreSQL's ${name}…`);
    await cluster.stop('fast');
  }
  if (state.redis) {
    const pids = redisPids(state).filter((pid) => alive(pid, 'redis-server'));
    if (pids.length > 0) say(`Stopping ${pids.length} Redis nodes…`);
    await RedisCluster.stopDetached(state.redis.dir, state.redis.ports);
    // stopDetached only signals them: wait, and kill the ones that do not end.
    if (!(await gone(pids, 'redis-server', 5000))) await terminate(pids, 'redis-server', 2000);
  }
  const left = await liveProcesses(state);
  if (left.length > 0) throw new Error(`still running: ${left.map(([pid, what]) => `${what} ${pid}`).join(', ')}`);
  if (remove) {
    rmSync(dir, { recursive: true, force: true });
    say(`Stopped; ${dir} deleted.`);
  } else {
    say(`Stopped; data and logs kept in ${dir} (cluster:up needs an empty --dir: add --remove to delete it).`);
  }
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      dir: { type: 'string', default: './cluster-data' },
      'base-port': { type: 'string', default: '4000' },
      domain: { type: 'string' },
      remove: { type: 'boolean', default: false },
    },
  });
  const dir = resolve(values.dir);
  if (positionals[0] === 'up') await up(dir, Number(values['base-port']), values.domain);
  else if (positionals[0] === 'down') await down(dir, values.remove);
  else throw new Error('usage: node cli/local-cluster.ts up [--dir DIR] [--base-port 4000] [--domain HOST:PORT] | down [--dir DIR] [--remove]');
}

main().then(
  // Nothing of ours is left to wait for: the processes started are detached.
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
