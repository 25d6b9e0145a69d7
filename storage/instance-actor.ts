import type { JsonWebKey } from 'node:crypto';
import type { Queryable } from './db.ts';
import type { AccountKeys } from './accounts.ts';

export interface InstanceActorKeys extends AccountKeys {
  ed25519_public_jwk: JsonWebKey;
  ed25519_private_jwk: JsonWebKey;
  created_at: Date;
}

export async function instanceActorKeys(db: Queryable): Promise<InstanceActorKeys | null> {
  const { rows } = await db.query<InstanceActorKeys>(
    'SELECT public_key_pem, private_key_pem, ed25519_public_jwk, ed25519_private_jwk, created_at FROM instance_actor_keys',
  );
  return rows[0] ?? null;
}

/** Saves the instance actor's keys unless some process saved them first; returns the keys that stand. */
export async function saveInstanceActorKeys(db: Queryable, keys: Omit<InstanceActorKeys, 'created_at'>): Promise<InstanceActorKeys> {
  await db.query(
    `INSERT INTO instance_actor_keys (public_key_pem, private_key_pem, ed25519_public_jwk, ed25519_private_jwk)
     VALUES ($1, $2, $3, $4) ON CONFLICT (singleton) DO NOTHING`,
    [keys.public_key_pem, keys.private_key_pem, JSON.stringify(keys.ed25519_public_jwk), JSON.stringify(keys.ed25519_private_jwk)],
  );
  return (await instanceActorKeys(db))!;
}
