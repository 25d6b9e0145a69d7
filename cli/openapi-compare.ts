// Compares this server's OpenAPI description (GET /api/openapi.json) with Mastodon's (abraham/mastodon-openapi's
// dist/schema.json, generated from Mastodon's documentation): which operations each has that the other lacks.
// Paths are compared with their parameters' names left out (`/api/v1/accounts/{id}` is `/api/v1/accounts/{account_id}`).
//
//   npm run openapi:compare -- [--server http://localhost:3000] [--mastodon ../shared/reference/mastodon-openapi.json]
//
// docs/api.md lists both sides; test/http/openapi.test.ts fails when that list and this comparison disagree.
import { readFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

interface Described {
  paths: Record<string, Record<string, unknown>>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** `GET /api/v1/accounts/{}` for each operation of a description. */
function operations(doc: Described): Set<string> {
  const out = new Set<string>();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const method of Object.keys(ops)) if (METHODS.includes(method)) out.add(`${method.toUpperCase()} ${path.replace(/\{[^}]+\}/g, '{}')}`);
  }
  return out;
}

/** Mastodon's operations we do not describe, and ours Mastodon's description lacks, sorted. */
export function compareWithMastodon(ours: Described, mastodon: Described): { theirsOnly: string[]; oursOnly: string[] } {
  const a = operations(ours);
  const b = operations(mastodon);
  return { theirsOnly: [...b].filter((op) => !a.has(op)).sort(), oursOnly: [...a].filter((op) => !b.has(op)).sort() };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      server: { type: 'string', default: process.env.PUBLIC_URL ?? 'http://localhost:3000' },
      mastodon: { type: 'string', default: process.env.MASTODON_OPENAPI ?? fileURLToPath(new URL('../../shared/reference/mastodon-openapi.json', import.meta.url)) },
    },
  });
  const res = await fetch(new URL('/api/openapi.json', values.server));
  if (!res.ok) throw new Error(`${values.server}/api/openapi.json answered ${res.status}`);
  const { theirsOnly, oursOnly } = compareWithMastodon((await res.json()) as Described, JSON.parse(await readFile(values.mastodon, 'utf8')) as Described);
  console.log(`In Mastodon's description, not served here (${theirsOnly.length}):`);
  for (const op of theirsOnly) console.log(`  ${op}`);
  console.log(`Served here, not in Mastodon's description (${oursOnly.length}):`);
  for (const op of oursOnly) console.log(`  ${op}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
