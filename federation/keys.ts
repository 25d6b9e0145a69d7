import { createPrivateKey, createPublicKey, generateKeyPair, type webcrypto } from 'node:crypto';
import { promisify } from 'node:util';
import type { Queryable } from '../storage/db.ts';
import { localAccountKeys, saveEd25519Keys, saveRsaKeys, type AccountKeys } from '../storage/accounts.ts';
import { instanceActorKeys, saveInstanceActorKeys, type InstanceActorKeys } from '../storage/instance-actor.ts';

type CryptoKeyPair = webcrypto.CryptoKeyPair;

const RSA = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;
const generateRsa = promisify(generateKeyPair);
// Fedify's key helpers come with Fedify, at its first use (federation/lazy.ts): only its dispatchers ask for keys.
const fedify = () => import('@fedify/fedify');

/**
 * The key pairs Fedify signs with: each local account's and the instance actor's. RSA (what HTTP Signatures use)
 * comes first, Ed25519 (for Object Integrity Proofs) second. Keys never change, so imported ones are kept.
 *
 * An account's keys are made the first time anything asks for them (its actor document, a delivery), not at sign-up:
 * a 2048-bit RSA pair takes a core for 100 ms or more, which was most of a sign-up's work, and an account that never
 * federates never needs one. Two processes making them at once keep the first saved (storage/accounts.ts).
 */
export class AccountKeyRing {
  private readonly cache = new Map<string, Promise<CryptoKeyPair[]>>();
  private instance: Promise<{ pairs: CryptoKeyPair[]; createdAt: Date }> | null = null;
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

  /** The instance actor's key pairs, made and stored on first need (two processes agree on the first saved). */
  instanceKeyPairs(): Promise<{ pairs: CryptoKeyPair[]; createdAt: Date }> {
    if (!this.instance) {
      this.instance = this.loadInstance();
      this.instance.catch(() => { this.instance = null; });
    }
    return this.instance;
  }

  private async loadInstance(): Promise<{ pairs: CryptoKeyPair[]; createdAt: Date }> {
    const { exportJwk, generateCryptoKeyPair } = await fedify();
    let keys: InstanceActorKeys | null = await instanceActorKeys(this.db);
    if (!keys) {
      const [rsa, ed25519] = await Promise.all([
        generateRsa('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } }),
        generateCryptoKeyPair('Ed25519'),
      ]);
      keys = await saveInstanceActorKeys(this.db, {
        public_key_pem: rsa.publicKey, private_key_pem: rsa.privateKey,
        ed25519_public_jwk: await exportJwk(ed25519.publicKey), ed25519_private_jwk: await exportJwk(ed25519.privateKey),
      });
    }
    return { pairs: await importPairs(keys), createdAt: keys.created_at };
  }

  private async load(accountId: string): Promise<CryptoKeyPair[]> {
    let keys = await localAccountKeys(this.db, accountId);
    if (!keys) return [];
    if (!keys.public_key_pem || !keys.private_key_pem) {
      const rsa = await generateRsa('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
      keys = await saveRsaKeys(this.db, accountId, rsa.publicKey, rsa.privateKey);
      if (!keys) return [];
    }
    if (!keys.ed25519_public_jwk || !keys.ed25519_private_jwk) {
      const { exportJwk, generateCryptoKeyPair } = await fedify();
      const pair = await generateCryptoKeyPair('Ed25519');
      keys = await saveEd25519Keys(this.db, accountId, await exportJwk(pair.publicKey), await exportJwk(pair.privateKey));
      if (!keys) return [];
    }
    return importPairs(keys);
  }
}

async function importPairs(keys: AccountKeys | InstanceActorKeys): Promise<CryptoKeyPair[]> {
  const { importJwk } = await fedify();
  if (!keys.public_key_pem || !keys.private_key_pem) return [];
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
