import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, DEFAULT_DATABASE_URL } from '../config.ts';

describe('settings', () => {
  it('has working defaults', () => {
    const c = loadConfig({});
    expect(c.port).toBe(3000);
    expect(c.localDomain).toBe('localhost:3000');
    expect(c.publicUrl).toBe('http://localhost:3000');
    expect(c.databaseUrl).toBe(DEFAULT_DATABASE_URL);
    expect(c.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(c.registrationsMode).toBe('open');
  });

  it('builds https URLs behind a TLS proxy', () => {
    expect(loadConfig({ LOCAL_DOMAIN: 'social.example', LOCAL_HTTPS: 'true' }).publicUrl).toBe('https://social.example');
  });

  it.each([
    [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'mysql://localhost/x' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'postgres://localhost:5432/' }, 'DATABASE_URL'],
    [{ REDIS_URL: 'http://localhost' }, 'REDIS_URL'],
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ LOCAL_DOMAIN: 'https://x.example/' }, 'LOCAL_DOMAIN'],
    [{ REGISTRATIONS_MODE: 'sometimes' }, 'REGISTRATIONS_MODE'],
    [{ LOCAL_HTTPS: 'maybe' }, 'LOCAL_HTTPS'],
  ])('refuses %o naming %s', (env, setting) => {
    let error: unknown;
    try {
      loadConfig(env);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).setting).toBe(setting);
    expect((error as ConfigError).message).toMatch(new RegExp(`^${setting}: `));
    expect((error as ConfigError).message).not.toContain('\n');
  });
});
