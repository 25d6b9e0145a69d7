// Every operator command answers --help with its own usage, without PostgreSQL or Redis being reachable.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { cliCommands, cliHelp } from '../../cli/admin.ts';

const run = promisify(execFile);

describe('npm run cli -- <command> --help', () => {
  const commands = cliCommands();

  it('knows the command groups the usage describes', () => {
    expect([...new Set(commands.map((c) => c.split(' ')[0]))]).toEqual(expect.arrayContaining(['accounts', 'rules', 'suggestions', 'reports', 'domains', 'federation', 'media', 'relay', 'emoji']));
    expect(commands.length).toBeGreaterThan(25);
  });

  it.each(commands)('%s --help prints that command\'s usage alone', (command) => {
    const [group, name] = command.split(' ') as [string, string];
    const help = cliHelp([group, name, '--help']);
    expect(help).not.toBeNull();
    const entries = help!.split('\n').filter((l) => /^ {2}\S/.test(l));
    expect(entries.length).toBeGreaterThan(0);
    for (const entry of entries) expect(entry.trim().startsWith(`${group} `)).toBe(true);
    expect(entries.some((e) => e.split(/[\s|/]+/).includes(name))).toBe(true);
    expect(cliHelp([group, name, '-h'])).toBe(help);
  });

  it('a group alone, or no command, prints the group, or everything', () => {
    expect(cliHelp(['domains', '--help'])!.split('\n').filter((l) => /^ {2}\S/.test(l)).every((l) => l.trim().startsWith('domains '))).toBe(true);
    const all = cliHelp([])!;
    for (const group of new Set(commands.map((c) => c.split(' ')[0]))) expect(all).toContain(`  ${group} `);
    expect(cliHelp(['help'])).toBe(all);
    expect(cliHelp(['accounts', 'create', 'alice'])).toBeNull();
  });

  it('answers on stdout with status 0 where PostgreSQL cannot be reached', async () => {
    const { stdout } = await run(process.execPath, ['cli/admin.ts', 'accounts', 'create', '--help'], {
      env: { ...process.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere', REDIS_URL: 'redis://127.0.0.1:1' },
      timeout: 20_000,
    });
    expect(stdout).toContain('accounts create <username> --email <email>');
  });
});
