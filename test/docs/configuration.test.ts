// docs/configuration.md lists every setting config.ts reads, and nothing else: a setting added to the code without
// its row (or a row left for a setting gone) fails here.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { loadConfig } from '../../config.ts';

const root = new URL('../../', import.meta.url);
const NAME = /^[A-Z][A-Z0-9_]{2,}$/;

/** Every environment variable config.ts names: quoted setting names (str(env, 'PORT', …)) and env.NAME reads. */
function namesInCode(): Set<string> {
  const source = readFileSync(new URL('config.ts', root), 'utf8');
  const quoted = [...source.matchAll(/'([A-Z][A-Z0-9_]{2,})'/g)].map((m) => m[1]!);
  const read = [...source.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!);
  return new Set([...quoted, ...read]);
}

/** The names in the first column of docs/configuration.md's settings table. */
function namesInDocs(): Set<string> {
  const names = new Set<string>();
  for (const line of readFileSync(new URL('docs/configuration.md', root), 'utf8').split('\n')) {
    if (!line.startsWith('| `')) continue;
    for (const m of line.split('|')[1]!.matchAll(/`([^`]+)`/g)) if (NAME.test(m[1]!)) names.add(m[1]!);
  }
  return names;
}

/** What loadConfig actually reads from an environment (a Proxy that records each name asked for). */
function namesRead(env: Record<string, string>): Set<string> {
  const read = new Set<string>();
  const proxy = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return target[name as string];
    },
  });
  loadConfig(proxy);
  return read;
}

describe('docs/configuration.md', () => {
  it('lists exactly the settings config.ts defines', () => {
    const code = namesInCode();
    const docs = namesInDocs();
    expect([...code].filter((n) => !docs.has(n)).sort(), 'settings in config.ts without a row in docs/configuration.md').toEqual([]);
    expect([...docs].filter((n) => !code.has(n)).sort(), 'rows in docs/configuration.md for settings config.ts does not read').toEqual([]);
  });

  it('covers what loadConfig reads, however it spells the name', () => {
    const environments: Record<string, string>[] = [
      {},
      { FILE_HOST: 's3', S3_BUCKET: 'b', S3_ACCESS_KEY_ID: 'k', S3_SECRET_ACCESS_KEY: 's', S3_PUBLIC_URL: 'https://cdn.example', S3_ENDPOINT: 'https://s3.example' },
      { DEEPL_API_KEY: 'key', DEEPL_API_URL: 'https://deepl.example' },
      { LIBRE_TRANSLATE_ENDPOINT: 'https://lt.example' },
      { SMTP_SERVER: 'mail.example', SMTP_LOGIN: 'me' },
      { SMTP_URL: 'smtp://mail.example' },
      { PREPARED_STATEMENTS: 'false', DATABASE_DIRECT_URL: 'postgres://postgres@127.0.0.1:5432/x', REDIS_CLUSTER_NODES: '127.0.0.1:7000' },
    ];
    const docs = namesInDocs();
    const read = new Set(environments.flatMap((env) => [...namesRead(env)]));
    expect([...read].filter((n) => NAME.test(n) && !docs.has(n)).sort()).toEqual([]);
  });
});
