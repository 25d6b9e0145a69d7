import { randomInt } from 'node:crypto';
import type { Db } from '../storage/db.ts';
import * as storage from '../storage/invites.ts';
import { forbidden, notFound, unprocessable } from '../errors.ts';
import { can } from './roles.ts';

/**
 * Invites, as Mastodon's: people whose role has `invite_users` make codes (/invites); a code, while not expired nor
 * used up, lets a person join through /invite/:code even while registrations are closed or need approval
 * (services/accounts.ts signUp), and makes them follow its maker when `autofollow`.
 */

/** Mastodon's choices of lifetime (seconds) and of uses. */
export const INVITE_EXPIRIES = [1800, 3600, 21_600, 43_200, 86_400, 604_800] as const;
export const INVITE_MAX_USES = [1, 5, 10, 25, 50, 100] as const;

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
/** Mastodon's codes: 8 letters and digits. */
const newCode = () => Array.from({ length: 8 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');

export type InviteState = 'valid' | 'expired' | 'used_up';

export function inviteState(invite: storage.InviteRow, now = new Date()): InviteState {
  if (invite.expires_at && invite.expires_at <= now) return 'expired';
  if (invite.max_uses !== null && invite.uses >= invite.max_uses) return 'used_up';
  return 'valid';
}

export async function createInvite(db: Db, maker: { accountId: string; permissions: number | string | null | undefined }, input: { maxUses: number | null; expiresIn: number | null; autofollow: boolean }): Promise<storage.InviteRow> {
  if (!can(maker.permissions, 'invite_users')) throw forbidden();
  if (input.maxUses !== null && !(INVITE_MAX_USES as readonly number[]).includes(input.maxUses)) throw unprocessable('Validation failed: Max uses is not one of the choices');
  if (input.expiresIn !== null && !(INVITE_EXPIRIES as readonly number[]).includes(input.expiresIn)) throw unprocessable('Validation failed: Expires in is not one of the choices');
  const expiresAt = input.expiresIn === null ? null : new Date(Date.now() + input.expiresIn * 1000);
  return storage.insertInvite(db, { accountId: maker.accountId, code: newCode(), maxUses: input.maxUses, expiresAt, autofollow: input.autofollow });
}

export async function endInvite(db: Db, maker: { accountId: string; permissions: number | string | null | undefined }, id: string): Promise<void> {
  if (!can(maker.permissions, 'invite_users')) throw forbidden();
  if (!(await storage.expireInvite(db, maker.accountId, id))) throw notFound();
}

/** The invite behind a code and whether it can be used; null for a code that names none. */
export async function lookUpInvite(db: Db, code: string): Promise<{ invite: storage.InviteRow; state: InviteState } | null> {
  if (!/^[A-Za-z0-9]{1,40}$/.test(code)) return null;
  const invite = await storage.findInviteByCode(db, code);
  return invite ? { invite, state: inviteState(invite) } : null;
}

/** Why an invite cannot be used, in the words of a 422 (one valid a moment ago was taken meanwhile: used up). */
export function inviteRefusal(invite: storage.InviteRow | null): string {
  if (!invite) return 'Validation failed: Invite code is not valid';
  return inviteState(invite) === 'expired' ? 'Validation failed: Invite has expired' : 'Validation failed: Invite has been used up';
}
