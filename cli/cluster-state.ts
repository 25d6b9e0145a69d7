// The state file of a local many-process set-up (`npm run cluster:up`, cli/local-cluster.ts): what runs where, read
// again by `cluster:down` and `cluster:failover`.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OwnPostgres } from './local-postgres.ts';
import { pgBouncerAdminUrl, pgBouncerIniPath } from './local-pgbouncer.ts';
import type { FailoverOptions } from './pg-failover.ts';

export const STATE_FILE = 'cluster.json';

export interface ServerProcess {
  role: 'web' | 'worker' | 'streaming';
  port: number | null;
  pid: number;
  log: string;
}

export interface ClusterState {
  dir: string;
  basePort: number;
  startedAt: string;
  settings: Record<string, string>;
  redis?: { dir: string; ports: number[] };
  /** Each cluster's directory (the data directory is `data/` in it: OwnPostgres) and port. */
  postgres: { primary?: { dir: string; port: number }; replica?: { dir: string; port: number } };
  pgbouncer?: { dir: string; port: number; pid?: number };
  processes: ServerProcess[];
}

export const statePath = (dir: string) => join(dir, STATE_FILE);

export function saveState(state: ClusterState): void {
  writeFileSync(statePath(state.dir), JSON.stringify(state, null, 2) + '\n');
}

export function loadState(dir: string): ClusterState | null {
  return existsSync(statePath(dir)) ? (JSON.parse(readFileSync(statePath(dir), 'utf8')) as ClusterState) : null;
}

/**
 * What `cluster:failover` needs to promote the set-up's replica and point its PgBouncer at it: the replica's data
 * directory (not the cluster directory the state lists), its port, PgBouncer's ini and admin console
 * (cli/local-pgbouncer.ts), the primary that failed.
 */
export function failoverOptionsOf(state: ClusterState): Pick<FailoverOptions, 'standbyDataDir' | 'standby' | 'pgbouncerIni' | 'pgbouncerAdminUrl' | 'oldPrimary'> {
  const { primary, replica } = state.postgres;
  if (!primary || !replica || !state.pgbouncer) throw new Error(`${statePath(state.dir)} has no PostgreSQL replica and PgBouncer (a start that failed?)`);
  return {
    standbyDataDir: OwnPostgres.at(replica.dir, replica.port).dataDirectory,
    standby: { host: '127.0.0.1', port: replica.port },
    pgbouncerIni: pgBouncerIniPath(state.pgbouncer.dir),
    pgbouncerAdminUrl: pgBouncerAdminUrl(state.pgbouncer.port),
    oldPrimary: { host: '127.0.0.1', port: primary.port },
  };
}
