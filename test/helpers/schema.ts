import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'vitest';

// Mastodon's API described as OpenAPI (abraham/mastodon-openapi's dist/schema.json, kept beside the checkout in
// ../shared/reference, or where MASTODON_OPENAPI says): our entities must have every required field, typed right.
export const MASTODON_OPENAPI = process.env.MASTODON_OPENAPI ?? fileURLToPath(new URL('../../../shared/reference/mastodon-openapi.json', import.meta.url));

const ajv = new Ajv2020({ strict: false, allErrors: true });
const addFormats = addFormatsModule as unknown as (a: Ajv2020) => void;
addFormats(ajv);
ajv.addFormat('iso-639-1', /^[a-z]{2,3}$/);
ajv.addFormat('html', true);
let loaded = false;

function load() {
  if (loaded) return;
  if (!existsSync(MASTODON_OPENAPI)) {
    throw new Error(`Mastodon's OpenAPI description is missing at ${MASTODON_OPENAPI}: put dist/schema.json of github.com/abraham/mastodon-openapi there, or set MASTODON_OPENAPI (see docs/testing.md)`);
  }
  const spec = JSON.parse(readFileSync(MASTODON_OPENAPI, 'utf8'));
  ajv.addSchema({ $id: 'mastodon', components: spec.components });
  loaded = true;
}

/** Asserts that `value` is a valid Mastodon entity of the named schema (e.g. 'Account', 'Relationship'). */
export function expectEntity(name: string, value: unknown): void {
  load();
  const validate = ajv.getSchema(`mastodon#/components/schemas/${name}`);
  if (!validate) throw new Error(`no schema ${name}`);
  const ok = validate(value);
  expect(ok ? [] : validate.errors, `${name} does not match Mastodon's schema`).toEqual([]);
}
