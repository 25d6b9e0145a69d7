import argon2 from 'argon2';

/** Mastodon's (Devise's) password length, for every place a password is chosen: sign-up, reset, change, CLI. */
export const PASSWORD_LENGTH = { min: 8, max: 72 } as const;

/** argon2id with the library's defaults: a slow, salted hash. */
export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, { type: argon2.argon2id });
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
