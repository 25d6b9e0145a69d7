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

  it('reads mail settings by URL or by Mastodon\'s names; none means mail is off', () => {
    expect(loadConfig({}).smtp).toBeNull();
    expect(loadConfig({ SMTP_URL: 'smtps://u:p@mail.example:465' }).smtp).toEqual({ url: 'smtps://u:p@mail.example:465', from: 'notifications@localhost' });
    expect(loadConfig({ SMTP_SERVER: 'mail.example', SMTP_LOGIN: 'me@x', SMTP_PASSWORD: 'p:w', SMTP_FROM_ADDRESS: 'Social <hi@social.example>' }).smtp)
      .toEqual({ url: 'smtp://me%40x:p%3Aw@mail.example:587', from: 'Social <hi@social.example>' });
  });

  it('reads single sign-on by Mastodon\'s OIDC_* names, with our defaults, and refuses what cannot work', () => {
    expect(loadConfig({}).oidc).toBeNull();
    const oidc = { OIDC_ENABLED: 'true', OIDC_ISSUER: 'https://id.example', OIDC_CLIENT_ID: 'c', OIDC_CLIENT_SECRET: 's' };
    expect(loadConfig({ ...oidc, LOCAL_DOMAIN: 'social.example', LOCAL_HTTPS: 'true' }).oidc).toMatchObject({
      issuer: 'https://id.example', discovery: true, scope: ['openid', 'profile', 'email'], uidField: 'sub', usePkce: true,
      assumeEmailIsVerified: false, linkExisting: false, createAccounts: true,
      redirectUri: 'https://social.example/auth/auth/openid_connect/callback',
    });
    expect(loadConfig({ ...oidc, OIDC_ISSUER: 'http://127.0.0.1:9000' }).oidc!.issuer).toBe('http://127.0.0.1:9000');
    const refused = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        return (err as ConfigError).setting;
      }
      return null;
    };
    expect(refused({ ...oidc, OIDC_ISSUER: 'http://id.example' })).toBe('OIDC_ISSUER');
    expect(refused({ ...oidc, OIDC_CLIENT_SECRET: '' })).toBe('OIDC_CLIENT_SECRET');
    expect(refused({ ...oidc, OIDC_SCOPE: 'profile,email' })).toBe('OIDC_SCOPE');
    expect(refused({ ...oidc, OIDC_DISCOVERY: 'false' })).toBe('OIDC_AUTH_ENDPOINT');
    expect(refused({ OMNIAUTH_ONLY: 'true' })).toBe('OMNIAUTH_ONLY');
    expect(loadConfig({ ...oidc, OMNIAUTH_ONLY: 'true' }).omniauthOnly).toBe(true);
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
    [{ OTP_SECRET: 'too-short' }, 'OTP_SECRET'],
    [{ SMTP_URL: 'http://mail.example' }, 'SMTP_URL'],
    [{ SMTP_SERVER: 'mail.example', SMTP_PORT: 'x' }, 'SMTP_PORT'],
    [{ PRIVACY_POLICY_FILE: '/no/such/file.html' }, 'PRIVACY_POLICY_FILE'],
    [{ PASSWORD_HASH_MEMORY_KIB: '8' }, 'PASSWORD_HASH_MEMORY_KIB'],
    [{ PASSWORD_HASH_TIME_COST: '0' }, 'PASSWORD_HASH_TIME_COST'],
    [{ DATABASE_QUERY_TIMEOUT_MS: '10' }, 'DATABASE_QUERY_TIMEOUT_MS'],
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
