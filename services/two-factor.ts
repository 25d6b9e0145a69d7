import { randomBytes } from 'node:crypto';
import { generateSecret, generateURI, verify } from 'otplib';
import QRCode from 'qrcode';
import type { Db } from '../storage/db.ts';
import { hashSecret } from '../storage/oauth.ts';
import { setOtp, useOtpBackupCode, useOtpStep, type UserRow } from '../storage/users.ts';

/** Ten single-use recovery codes, as Mastodon gives. */
const RECOVERY_CODES = 10;

/** A new TOTP secret (base32, 160 bits). */
export function newTotpSecret(): string {
  return generateSecret();
}

/** What an authenticator app scans to take a secret: the otpauth:// URI, and its QR code as a PNG data URL. */
export async function totpEnrolment(secret: string, issuer: string, label: string): Promise<{ uri: string; qrDataUrl: string }> {
  const uri = generateURI({ issuer, label, secret });
  const qrDataUrl = await QRCode.toDataURL(uri, { errorCorrectionLevel: 'M', margin: 2, width: 220 });
  return { uri, qrDataUrl };
}

/** Whether a six-digit code is right for this secret now (one step of clock drift either way). */
export async function totpMatches(secret: string, code: string): Promise<{ timeStep: number } | null> {
  if (!/^\d{6}$/.test(code)) return null;
  const result = await verify({ secret, token: code, epochTolerance: 30 }).catch(() => ({ valid: false as const }));
  return result.valid && 'timeStep' in result ? { timeStep: result.timeStep } : null;
}

function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODES }, () => randomBytes(5).toString('hex'));
}

/** Turns two-factor sign-in on with a secret the person has proved they hold; returns the recovery codes to show once. */
export async function enableTwoFactor(db: Db, userId: string, secret: string): Promise<string[]> {
  const codes = newRecoveryCodes();
  await setOtp(db, userId, { secret, enabled: true, backupCodeHashes: codes.map((c) => hashSecret(c)) });
  return codes;
}

export async function disableTwoFactor(db: Db, userId: string): Promise<void> {
  await setOtp(db, userId, { secret: null, enabled: false, backupCodeHashes: [] });
}

/** New recovery codes, replacing the old ones. */
export async function regenerateRecoveryCodes(db: Db, user: UserRow): Promise<string[]> {
  const codes = newRecoveryCodes();
  await setOtp(db, user.id, { secret: user.otp_secret, enabled: true, backupCodeHashes: codes.map((c) => hashSecret(c)) });
  return codes;
}

/**
 * Checks a second factor: a TOTP code (each time step works once, so a code seen over a shoulder cannot be replayed)
 * or one of the recovery codes (used up by the check).
 */
export async function secondFactorMatches(db: Db, user: UserRow, input: string): Promise<boolean> {
  if (!user.otp_secret || !user.otp_enabled_at) return false;
  const code = input.replace(/\s+/g, '').toLowerCase();
  const totp = await totpMatches(user.otp_secret, code);
  if (totp) return useOtpStep(db, user.id, totp.timeStep);
  if (/^[0-9a-f]{10}$/.test(code)) return useOtpBackupCode(db, user.id, hashSecret(code));
  return false;
}
