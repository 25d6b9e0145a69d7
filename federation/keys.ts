import { createPrivateKey, createPublicKey, type webcrypto } from 'node:crypto';
import { exportJwk, generateCryptoKeyPair, importJwk } from '@fedify/fedify';
import type { Queryable } from '../storage/db.ts';
import { localAccountKeys, saveEd25519Keys } from '../storage/accounts.ts';

type CryptoKeyPair = webcrypto.CryptoKeyPair;

const RSA = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;

/**
 * A local account's key pairs as Fedify signs with them: RSA (made at sign-up, what HTTP Signatures use) and
 * Ed25519 (made on first need, for Object Integrity Proofs). Keys never change, so imported ones are kept.
 */
export class AccountKeyRing {
  private readonly cache = new Map<string, Promise<CryptoKeyPair[]>>();
  private readonly db: Queryable;

  constructor(db: Queryable) {
    this.db = db;
  }

  keyPairs(accountId: string): Promise<CryptoKeyPair[]> {
    let pending = this.cache.get(accountId);
    if (!pending) {
      pending = this.load(accountId);
      this.cache.set(accountId, pending);
      pending.then((pairs) => pairs.length === 0 && this.cache.delete(accountId), () => this.cache.delete(accountId));
      if (this.cache.size > 10_000) this.cache.delete(this.cache.keys().next().value!);
    }
    return pending;
  }

  private async load(accountId: string): Promise<CryptoKeyPair[]> {
    let keys = await localAccountKeys(this.db, accountId);
    if (!keys) return [];
    if (!keys.ed25519_public_jwk || !keys.ed25519_private_jwk) {
      const pair = await generateCryptoKeyPair('Ed25519');
      keys = await saveEd25519Keys(this.db, accountId, await exportJwk(pair.publicKey), await exportJwk(pair.privateKey));
      if (!keys) return [];
    }
    const rsa: CryptoKeyPair = {
      privateKey: await crypto.subtle.importKey('pkcs8', createPrivateKey(keys.private_key_pem).export({ type: 'pkcs8', format: 'der' }), RSA, true, ['sign']),
      publicKey: await crypto.subtle.importKey('spki', createPublicKey(keys.public_key_pem).export({ type: 'spki', format: 'der' }), RSA, true, ['verify']),
    };
    const ed25519: CryptoKeyPair = {
      privateKey: await importJwk(keys.ed25519_private_jwk!, 'private'),
      publicKey: await importJwk(keys.ed25519_public_jwk!, 'public'),
    };
    return [rsa, ed25519];
  }
}
