import type { Queryable } from './db.ts';

/** The run-time settings as stored: by name, each a JSON value (services/server-settings.ts reads them). */
export async function readServerSettings(db: Queryable): Promise<Map<string, unknown>> {
  const { rows } = await db.query<{ name: string; value: unknown }>(`SELECT name, value FROM server_settings LIMIT 200`);
  return new Map(rows.map((r) => [r.name, r.value]));
}

/** Writes the settings that have no row yet (the environment's values, on a first start); others are kept. */
export async function seedServerSettings(db: Queryable, values: Record<string, unknown>): Promise<void> {
  const names = Object.keys(values);
  await db.query(
    `INSERT INTO server_settings (name, value)
     SELECT name, value FROM unnest($1::text[], $2::jsonb[]) AS s(name, value)
     ON CONFLICT (name) DO NOTHING`,
    [names, names.map((n) => JSON.stringify(values[n]))],
  );
}

/** Stores these settings (one statement: all or none), stamping the ones whose value changed. */
export async function writeServerSettings(db: Queryable, values: Record<string, unknown>): Promise<void> {
  const names = Object.keys(values);
  if (names.length === 0) return;
  await db.query(
    `INSERT INTO server_settings (name, value)
     SELECT name, value FROM unnest($1::text[], $2::jsonb[]) AS s(name, value)
     ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = now()
      WHERE server_settings.value IS DISTINCT FROM excluded.value`,
    [names, names.map((n) => JSON.stringify(values[n]))],
  );
}
