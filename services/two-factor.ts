import { personChanged } from './session-cache.ts';
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppContext } from '../context.ts';
import type { Config } from '../config.ts';
import { hashSecret } from '../storage/oauth.ts';
import { transaction } from '../storage/db.ts';
import { deleteUserSecurityKeys } from '../storage/webauthn-credentials.ts';
import { setOtp, useOtpBackupCode, useOtpStep, type UserRow } from '../storage/users.ts';

/** Ten single-use recovery codes, as Mastodon gives. */
const RECOVERY_CODES = 10;

// otplib (with its base32 and hashing plugins: ~14 modules) is imported at first use, not at start: only two-factor
// enrolment and sign-in with a code need it.
const otp = () => import('otplib');

/** A new TOTP secret (base32, 160 bits). */
export async function newTotpSecret(): Promise<string> {
  const { generateSecret } = await otp();
  return generateSecret();
}

/** What an authenticator app scans to take a secret: the otpauth:// URI, and its QR code as a PNG data URL. */
export async function totpEnrolment(secret: string, issuer: string, label: string): Promise<{ uri: string; qrDataUrl: string }> {
  const { generateURI } = await otp();
  const uri = generateURI({ issuer, label, secret });
  const { default: QRCode } = await import('qrcode'); // loaded at first enrolment, not at start
  const qrDataUrl = await QRCode.toDataURL(uri, { errorCorrectionLevel: 'M', margin: 2, width: 220 });
  return { uri, qrDataUrl };
}

/** Whether a six-digit code is right for this secret now (one step of clock drift either way). */
export async function totpMatches(secret: string, code: string): Promise<{ timeStep: number } | null> {
  if (!/^\d{6}$/.test(code)) return null;
  const { verify } = await otp();
  const result = await verify({ secret, token: code, epochTolerance: 30 }).catch(() => ({ valid: false as const }));
  return result.valid && 'timeStep' in result ? { timeStep: result.timeStep } : null;
}

/**
 * The key that encrypts TOTP secrets at rest (a database dump alone does not give anyone's second factor):
 * SHA-256 of OTP_SECRET, or 32 random bytes kept in DATA_DIR/otp-secret.key, made on first use.
 */
const keys = new Map<string, Buffer>();
function otpKey(config: Pick<Config, 'otpSecret' | 'dataDir'>): Buffer {
  const id = config.otpSecret ? `secret:${config.otpSecret}` : `file:${config.dataDir}`;
  let key = keys.get(id);
  if (key) return key;
  if (config.otpSecret) {
    key = createHash('sha256').update(config.otpSecret).digest();
  } else {
    const file = join(config.dataDir, 'otp-secret.key');
    try {
      key = readFileSync(file);
    } catch {
      mkdirSync(config.dataDir, { recursive: true });
      // wx: two processes starting together keep the first one's key.
      try {
        writeFileSync(file, randomBytes(32), { mode: 0o600, flag: 'wx' });
      } catch (err) {
        if ((err as { code?: string }).code !== 'EEXIST') throw err;
      }
      key = readFileSync(file);
    }
    if (key.length !== 32) throw new Error(`${file} must hold 32 bytes`);
  }
  keys.set(id, key);
  return key;
}

/**
 * A key of this server for one purpose (`label`), derived from the same secret as the two-factor key (HMAC-SHA256 of
 * the label), so that one secret serves every signed link without one purpose's signatures counting for another.
 */
export function serverKey(config: Pick<Config, 'otpSecret' | 'dataDir'>, label: string): Buffer {
  return createHmac('sha256', otpKey(config)).update(label).digest();
}

/** AES-256-GCM, stored as `v1:` and base64 of IV, tag and ciphertext. */
function sealSecret(config: Pick<Config, 'otpSecret' | 'dataDir'>, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', otpKey(config), iv);
  const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `v1:${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64')}`;
}

function openSecret(config: Pick<Config, 'otpSecret' | 'dataDir'>, stored: string): string | null {
  if (!stored.startsWith('v1:')) return null;
  try {
    const raw = Buffer.from(stored.slice(3), 'base64');
    const decipher = createDecipheriv('aes-256-gcm', otpKey(config), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return null; // another key (OTP_SECRET changed): the second factor cannot be checked, so it fails
  }
}

function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODES }, () => randomBytes(5).toString('hex'));
}

/** Turns two-factor sign-in on with a secret the person has proved they hold; returns the recovery codes to show once. */
export async function enableTwoFactor(ctx: AppContext, userId: string, secret: string): Promise<string[]> {
  const codes = newRecoveryCodes();
  await setOtp(ctx.db, userId, { secret: sealSecret(ctx.config, secret), enabled: true, backupCodeHashes: codes.map((c) => hashSecret(c)) });
  await personChanged(ctx, { userId });
  return codes;
}

/** Off, with the security keys too (as Mastodon: keys are a second factor beside the app's codes, never alone); passkeys, which sign in alone, stay. */
export async function disableTwoFactor(ctx: AppContext, userId: string): Promise<void> {
  await transaction(ctx.db, async (tx) => {
    await setOtp(tx, userId, { secret: null, enabled: false, backupCodeHashes: [] });
    await deleteUserSecurityKeys(tx, userId);
  });
  await personChanged(ctx, { userId });
}

/** New recovery codes, replacing the old ones. */
export async function regenerateRecoveryCodes(ctx: AppContext, user: UserRow): Promise<string[]> {
  const codes = newRecoveryCodes();
  await setOtp(ctx.db, user.id, { secret: user.otp_secret, enabled: true, backupCodeHashes: codes.map((c) => hashSecret(c)) });
  await personChanged(ctx, { userId: user.id });
  return codes;
}

/**
 * Checks a second factor: a TOTP code (each time step works once, so a code seen over a shoulder cannot be replayed)
 * or one of the recovery codes (used up by the check).
 */
export async function secondFactorMatches(ctx: AppContext, user: UserRow, input: string): Promise<boolean> {
  if (!user.otp_secret || !user.otp_enabled_at) return false;
  const code = input.replace(/\s+/g, '').toLowerCase();
  const secret = openSecret(ctx.config, user.otp_secret);
  const totp = secret ? await totpMatches(secret, code) : null;
  if (totp) return useOtpStep(ctx.db, user.id, totp.timeStep);
  if (/^[0-9a-f]{10}$/.test(code)) return useOtpBackupCode(ctx.db, user.id, hashSecret(code));
  return false;
}
