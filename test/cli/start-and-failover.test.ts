import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseStartScript, startCommand } from '../../cli/start-command.ts';
import { failoverOptionsFromArgs } from '../../cli/pg-failover.ts';
import { saveState, type ClusterState } from '../../cli/cluster-state.ts';

describe('npm start\'s command, read from package.json for the other ways the server is started', () => {
  it('has the environment and the flags of the start script', () => {
    const start = startCommand();
    expect(start.env).toEqual(expect.objectContaining({ MALLOC_ARENA_MAX: '2', NODE_COMPILE_CACHE: 'node_modules/.cache/node-compile-cache' }));
    expect(start.nodeFlags).toEqual(expect.arrayContaining(['--max-semi-space-size=8', '--heap-growing-percent=50', '--expose-gc']));
    expect(start.script).toBe('main.ts');
  });

  it('refuses a script it cannot read whole rather than run the server otherwise', () => {
    expect(parseStartScript('A=1 B=two node --flag=3 main.ts')).toEqual({ env: { A: '1', B: 'two' }, nodeFlags: ['--flag=3'], script: 'main.ts' });
    for (const script of ['tsx main.ts', 'A=1 node', 'node --flag', 'node main.ts && echo done', 'node --title="a b" main.ts', 'node $FLAGS main.ts']) {
      expect(() => parseStartScript(script), script).toThrow(/start script/);
    }
  });
});

describe('cluster:failover\'s options', () => {
  let dir: string;
  const state = (root: string): ClusterState => ({
    dir: root, basePort: 4000, startedAt: new Date().toISOString(), settings: {}, processes: [],
    postgres: { primary: { dir: join(root, 'postgres-primary'), port: 4020 }, replica: { dir: join(root, 'postgres-replica'), port: 4021 } },
    pgbouncer: { dir: join(root, 'pgbouncer'), port: 4022 },
  });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fedi-failover-options-'));
    saveState(state(dir));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('come from cluster:up\'s cluster.json: the replica\'s data directory, not the directory listed', () => {
    expect(failoverOptionsFromArgs(['--dir', dir])).toEqual({
      standbyDataDir: join(dir, 'postgres-replica', 'data'),
      standby: { host: '127.0.0.1', port: 4021 },
      pgbouncerIni: join(dir, 'pgbouncer', 'pgbouncer.ini'),
      pgbouncerAdminUrl: 'postgres://postgres@127.0.0.1:4022/pgbouncer',
      oldPrimary: { host: '127.0.0.1', port: 4020 },
      pgBin: undefined,
    });
    // A flag given wins over the file.
    expect(failoverOptionsFromArgs(['--dir', dir, '--standby-data', '/srv/pg/data']).standbyDataDir).toBe('/srv/pg/data');
  });

  it('come from the flags alone for a set-up of one\'s own, and say what is missing', () => {
    const flags = ['--standby-host', '10.0.0.6', '--pgbouncer-ini', '/etc/pgbouncer/pgbouncer.ini', '--pgbouncer-admin', 'postgres://pgbouncer@127.0.0.1:6432/pgbouncer'];
    expect(failoverOptionsFromArgs(flags)).toEqual({
      standbyDataDir: undefined,
      standby: { host: '10.0.0.6', port: 5432 },
      pgbouncerIni: '/etc/pgbouncer/pgbouncer.ini',
      pgbouncerAdminUrl: 'postgres://pgbouncer@127.0.0.1:6432/pgbouncer',
      oldPrimary: undefined,
      pgBin: undefined,
    });
    expect(() => failoverOptionsFromArgs(['--standby-host', '10.0.0.6'])).toThrow('missing --pgbouncer-ini, --pgbouncer-admin');
    expect(() => failoverOptionsFromArgs(['--dir', join(dir, 'nothing-here')])).toThrow(/no cluster\.json there/);
  });
});
