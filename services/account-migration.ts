import type { AppContext } from '../context.ts';
import { transaction, type Queryable } from '../storage/db.ts';
import { findAccountById, setAlsoKnownAs, setMovedTo, type AccountRow } from '../storage/accounts.ts';
import { migrationSince, recordMigration } from '../storage/account-moves.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';
import type { UserRow } from '../storage/users.ts';
import { queueDelivery } from './deliveries.ts';
import { publishTokenInvalidation } from './token-cache.ts';
import { checkCurrentPassword } from './sign-in.ts';
import { secondFactorMatches } from './two-factor.ts';
import { accountUri } from './uris.ts';

/**
 * Account moves, as Mastodon's: an account lists the accounts that are also it (aliases, published as
 * alsoKnownAs), and moves to one that lists it back. The old account then points at the new one (movedTo), its
 * followers' servers are sent a Move, and its followers here follow the new account (jobs/account-move.ts). A Move
 * received for a remote account ends the same way (federation/move.ts).
 */

/** Mastodon's AccountMigration::COOLDOWN_PERIOD: one move per 30 days. */
export const MOVE_COOLDOWN_MS = 30 * 24 * 3600 * 1000;
/** Aliases an account may list (bounded: each is published in its actor document). */
export const MAX_ALIASES = 16;

/** What an error says is wrong, for the form (never a 500). */
export type MigrationResult = { ok: true; target: AccountRow } | { ok: false; field: 'acct' | 'current_password' | 'otp_attempt' | 'base'; error: string };

/** Finds the account an address names (`user@domain`, `@user@domain`, a local username or an actor URL); remote ones fetched afresh when `fresh`. */
export type AccountResolver = (address: string, fresh: boolean) => Promise<AccountRow | null>;

/** The resolver through federation (loaded at first use, as Fedify is). */
export function federatedResolver(app: AppContext, actingAs: AccountRow): AccountResolver {
  return async (address, fresh) => (await import('../federation/move.ts')).resolveAccountAddress(app, address, actingAs, { fresh });
}

const normalized = (address: string) => address.trim().replace(/^@/, '');

/** Adds an alias: the account the address names, by its ActivityPub id. */
export async function addAlias(app: AppContext, account: AccountRow, address: string, resolve: AccountResolver): Promise<MigrationResult> {
  const acct = normalized(address);
  if (acct === '') return { ok: false, field: 'acct', error: 'Enter the address of your other account (name@server).' };
  const target = await resolve(acct, false).catch(() => null);
  if (!target || target.suspended_at) return { ok: false, field: 'acct', error: 'No account was found at that address.' };
  if (target.id === account.id) return { ok: false, field: 'acct', error: 'That is this account: an alias names another one.' };
  const uri = accountUri(app.render, target);
  const current = (await findAccountById(app.db, account.id))?.also_known_as ?? [];
  if (current.includes(uri)) return { ok: false, field: 'acct', error: 'That account is already an alias.' };
  if (current.length >= MAX_ALIASES) return { ok: false, field: 'acct', error: `An account may have at most ${MAX_ALIASES} aliases.` };
  await saveAliases(app, account.id, [...current, uri]);
  return { ok: true, target };
}

/** Removes an alias by its ActivityPub id (removing one that is not there changes nothing). */
export async function removeAlias(app: AppContext, account: AccountRow, uri: string): Promise<void> {
  const current = (await findAccountById(app.db, account.id))?.also_known_as ?? [];
  if (!current.includes(uri)) return;
  await saveAliases(app, account.id, current.filter((u) => u !== uri));
}

async function saveAliases(app: AppContext, accountId: string, uris: string[]): Promise<void> {
  // Other servers see the new alsoKnownAs through an Update of the actor (and read it afresh when checking a Move).
  const delivery = await transaction(app.db, async (tx) => {
    await setAlsoKnownAs(tx, accountId, uris);
    return queueDelivery(tx, { activity: 'UpdatePerson', accountId });
  });
  await app.versions.bump({ accounts: [accountId] });
  await app.jobs.enqueue(delivery).catch(() => {}); // swept again from the outbox
}

export interface MoveRequest {
  acct: string;
  currentPassword: string;
  /** The TOTP (or a recovery) code, asked when two-factor sign-in is on. */
  otp: string;
}

/**
 * Moves a local account to another (Mastodon's Settings::MigrationsController#create and MoveService): the current
 * password (and second factor), the cooldown, then the target fetched afresh must list this account as an alias.
 */
export async function moveAccount(app: AppContext, user: UserRow, account: AccountRow, req: MoveRequest, resolve: AccountResolver): Promise<MigrationResult> {
  const acct = normalized(req.acct);
  if (acct === '') return { ok: false, field: 'acct', error: 'Enter the address of the account to move to (name@server).' };
  const wrongPassword = await checkCurrentPassword(app, user, req.currentPassword);
  if (wrongPassword) return { ok: false, field: 'current_password', error: wrongPassword };
  if (user.otp_enabled_at && !(await secondFactorMatches(app, user, req.otp))) {
    return { ok: false, field: 'otp_attempt', error: 'Invalid two-factor code or recovery code.' };
  }
  const recent = await migrationSince(app.db, account.id, new Date(Date.now() - MOVE_COOLDOWN_MS));
  if (recent) {
    const until = new Date(recent.created_at.getTime() + MOVE_COOLDOWN_MS).toISOString().slice(0, 10);
    return { ok: false, field: 'base', error: `You have moved this account recently; you can move it again from ${until}.` };
  }
  const target = await resolve(acct, true).catch(() => null);
  if (!target || target.suspended_at) return { ok: false, field: 'acct', error: 'No account was found at that address.' };
  if (target.id === account.id) return { ok: false, field: 'acct', error: 'You cannot move an account to itself.' };
  const me = (await findAccountById(app.db, account.id)) ?? account;
  if (me.moved_to_account_id === target.id) return { ok: false, field: 'acct', error: 'This account has already moved to that one.' };
  if (!target.also_known_as.includes(accountUri(app.render, me))) {
    return { ok: false, field: 'acct', error: `That account does not list this one as an alias yet. On it, add ${me.username}@${app.config.localDomain} as an alias first.` };
  }
  await startMove(app, me, target, { local: { acct, followersCount: me.followers_count } });
  return { ok: true, target };
}

/** Cancels this account's redirect (Mastodon's "cancel redirect"): it is usable again; its followers stay where they went. */
export async function cancelRedirect(app: AppContext, account: AccountRow): Promise<void> {
  const delivery = await transaction(app.db, async (tx) => {
    await setMovedTo(tx, account.id, null);
    return queueDelivery(tx, { activity: 'UpdatePerson', accountId: account.id });
  });
  await app.versions.bump({ accounts: [account.id] });
  await forgetTokensOf(app, [account]);
  await app.jobs.enqueue(delivery).catch(() => {});
}

/** Cached tokens carry whether their account has moved (http/plugins/auth.ts): every process must read them again. */
async function forgetTokensOf(app: AppContext, accounts: AccountRow[]): Promise<void> {
  for (const a of accounts) {
    if (a.domain !== null) continue;
    app.tokens.forget(`account:${a.id}`);
    await publishTokenInvalidation(app.redis, app.config.redisPrefix, { accountId: a.id });
  }
}

/**
 * Points `origin` at `target` and queues what follows: the Move to origin's followers' servers (for a local origin,
 * a delivery as any other: federation/outbound.ts), and the move of origin's followers here (jobs/account-move.ts),
 * in the transaction of the change. A move back (the target had moved to origin) makes the target usable again.
 */
export async function startMove(app: AppContext, origin: AccountRow, target: AccountRow, opts: { local?: { acct: string; followersCount: number } }): Promise<void> {
  const rows = await transaction(app.db, async (tx) => {
    const out: OutboxRow[] = [];
    await setMovedTo(tx, origin.id, target.id);
    if (target.moved_to_account_id === origin.id) await setMovedTo(tx, target.id, null);
    if (opts.local) {
      const moveId = await recordMigration(tx, { accountId: origin.id, targetId: target.id, acct: opts.local.acct, followersCount: opts.local.followersCount });
      // Other servers learn of movedTo through the Update, and of the move itself through the Move.
      out.push(await queueDelivery(tx, { activity: 'UpdatePerson', accountId: origin.id }));
      out.push(await queueDelivery(tx, { activity: 'Move', accountId: origin.id, targetId: target.id, moveId }));
    }
    out.push(await queueAccountMove(tx, { accountId: origin.id, targetId: target.id }));
    return out;
  });
  await app.versions.bump({ accounts: [origin.id, target.id] });
  await forgetTokensOf(app, [origin, target]);
  await app.jobs.enqueueMany(rows).catch(() => {}); // swept again from the outbox
}

/** The job's payload: `after` is the follow the previous batch ended at. */
export interface AccountMovePayload {
  accountId: string;
  targetId: string;
  after?: string;
  [key: string]: unknown;
}

export function queueAccountMove(db: Queryable, payload: AccountMovePayload): Promise<OutboxRow> {
  return addToOutbox(db, 'accountMove', payload);
}

