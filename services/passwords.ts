import argon2 from 'argon2';

/** Mastodon's (Devise's) password length, for every place a password is chosen: sign-up, reset, change, CLI. */
export const PASSWORD_LENGTH = { min: 8, max: 72 } as const;

/** argon2id's cost for new hashes: the library's defaults (64 MiB, 3 passes) unless the settings say otherwise. */
let cost = { memoryKib: 65_536, timeCost: 3 };

/** Called once at start-up with PASSWORD_HASH_MEMORY_KIB and PASSWORD_HASH_TIME_COST (config.ts). */
export function setPasswordHashCost(settings: { memoryKib: number; timeCost: number }): void {
  cost = settings;
}

/** argon2id: a slow, salted hash. Verifying reads the cost from the hash, so hashes made at another cost still verify. */
export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, { type: argon2.argon2id, memoryCost: cost.memoryKib, timeCost: cost.timeCost });
}

let dummyHash: Promise<string> | undefined;

/** Checks a password; an unknown user costs the same time, so timing does not tell which emails exist. */
export async function verifyPassword(hash: string | null, password: string): Promise<boolean> {
  if (hash === null) {
    dummyHash ??= hashPassword('not a real password');
    await argon2.verify(await dummyHash, password).catch(() => false);
    return false;
  }
  return argon2.verify(hash, password).catch(() => false);
}
