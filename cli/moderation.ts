// Operator commands for account moderation and reports: `npm run cli -- accounts suspend …`, `reports …`
// (dispatched from cli/admin.ts). The same services as the admin API (services/moderation.ts).
import { parseArgs } from 'node:util';
import type { RedisClient } from '../storage/redis.ts';
import type { Db } from '../storage/db.ts';
import { CacheVersions } from '../storage/cache-versions.ts';
import { findAccountById, findAccountByUsername, findAccountsByIds, type AccountRow } from '../storage/accounts.ts';
import { findReport, reportsPage } from '../storage/reports.ts';
import type { Actor } from '../services/action-log.ts';
import { isId } from '../storage/ids.ts';
import type { TokenInvalidation } from '../services/token-cache.ts';
import * as moderation from '../services/moderation.ts';
import { approveAppeal, rejectAppeal } from '../services/strikes.ts';
import { findStrike, pendingAppeals } from '../storage/strikes.ts';
import { ApiError } from '../errors.ts';

export const MODERATION_USAGE = `  accounts suspend|unsuspend <username | username@domain>
      Suspends an account (its tokens refused, its posts hidden everywhere, a local one sent to its followers'
      servers as a Delete of its actor by the running server), or lifts the suspension.
  accounts silence|unsilence <username | username@domain>
      Limits an account (kept out of public timelines), or lifts that.
  accounts sensitive|unsensitive <username | username@domain>
      Shows all of an account's posts as sensitive, or stops that.
  accounts disable|enable <username>
      Refuses a local user's sign-in and tokens, or lets them in again.
  accounts reject <username>
      Removes a sign-up that waits for approval.
  reports list [--resolved] [--limit=<n>]
      Prints open (or resolved) reports, newest first: id, reporter, reported account, category, comment.
  reports resolve <id> / reports reopen <id>
      Marks a report resolved, or open again.
  appeals list [--limit=<n>]
      Prints appeals waiting for a decision, oldest first: id, account, what the strike did, the appeal's text.
  appeals approve <id> / appeals reject <id>
      Approves an appeal (the strike's action is undone and the strike overruled) or rejects it; either way the
      person is mailed (by the running server's outbox sweeper).`;

const ACCOUNT_COMMANDS = new Set(['suspend', 'unsuspend', 'silence', 'unsilence', 'sensitive', 'unsensitive', 'disable', 'enable', 'reject']);

/** Whether `argv` is one of these commands (cli/admin.ts hands it over before its own parsing). */
export function isModerationCommand(argv: string[]): boolean {
  return argv[0] === 'reports' || argv[0] === 'appeals' || (argv[0] === 'accounts' && ACCOUNT_COMMANDS.has(argv[1] ?? ''));
}

export class ModerationUsageError extends Error {}

export interface ModerationCliDeps {
  db: Db;
  invalidate: (what: TokenInvalidation) => Promise<void>;
  redis: RedisClient;
  redisPrefix: string;
  /** Who the audit log names: the --as operator's account, or null (the shell's operator). */
  actor?: Actor;
}

const acct = (a: Pick<AccountRow, 'username' | 'domain'>) => (a.domain ? `${a.username}@${a.domain}` : a.username);

async function accountNamed(db: Db, name: string | undefined): Promise<AccountRow> {
  if (!name) throw new ModerationUsageError('an account name is required');
  const [username, domain] = name.replace(/^@/, '').split('@', 2) as [string, string | undefined];
  const account = await findAccountByUsername(db, username, domain ?? null);
  if (!account) throw new Error(`no account named ${name}`);
  return account;
}

export async function moderationCommand(argv: string[], deps: ModerationCliDeps, out: (line: string) => void): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { resolved: { type: 'boolean', default: false }, limit: { type: 'string' } },
  });
  const [group, command, arg, ...rest] = positionals;
  if (rest.length > 0) throw new ModerationUsageError(`unexpected argument: ${rest[0]}`);
  // No job queue here: what is to be sent out waits in the outbox for a running server's sweeper.
  const services: moderation.ModerationDeps = { db: deps.db, versions: new CacheVersions(deps.redis, deps.redisPrefix), invalidate: deps.invalidate, jobs: null };
  const by = deps.actor ?? null;
  if (group === 'accounts') return accountCommand(services, by, command!, arg, out);
  if (group === 'appeals') return appealCommand(services, by, command, arg, values.limit, out);
  switch (command) {
    case 'list': {
      if (values.limit !== undefined && !/^\d{1,3}$/.test(values.limit)) throw new ModerationUsageError('--limit takes a number up to 999');
      const rows = await reportsPage(deps.db, { resolved: values.resolved }, { limit: Math.max(1, Number(values.limit ?? 100)) });
      const accounts = new Map((await findAccountsByIds(deps.db, [...new Set(rows.flatMap((r) => [r.account_id, r.target_account_id]))])).map((a) => [a.id, a]));
      const name = (id: string) => (accounts.get(id) ? acct(accounts.get(id)!) : id);
      for (const r of rows) {
        const extra = [r.status_ids.length > 0 && `${r.status_ids.length} status(es)`, r.forwarded && 'forwarded', r.action_taken_at && 'resolved'].filter(Boolean);
        out(`${r.id}  ${name(r.account_id)} -> ${name(r.target_account_id)}  ${r.category}${extra.length ? ` (${extra.join(', ')})` : ''}  ${JSON.stringify(r.comment)}`);
      }
      if (rows.length === 0) out(values.resolved ? 'no resolved reports' : 'no open reports');
      return;
    }
    case 'resolve':
    case 'reopen': {
      if (!arg) throw new ModerationUsageError(`reports ${command} takes the id of a report (see reports list)`);
      if (!isId(arg) || !(await findReport(deps.db, arg))) throw new Error(`no report with id ${arg}`);
      await (command === 'resolve' ? moderation.reportActions.resolve : moderation.reportActions.reopen)(services, arg, by);
      out(`report ${arg} ${command === 'resolve' ? 'resolved' : 'reopened'}`);
      return;
    }
    default:
      throw new ModerationUsageError(`unknown command: reports ${command ?? ''}`.trim());
  }
}

async function accountCommand(deps: moderation.ModerationDeps, by: Actor, command: string, name: string | undefined, out: (line: string) => void): Promise<void> {
  const account = await accountNamed(deps.db, name);
  const who = acct(account);
  const local = () => {
    if (account.domain !== null) throw new Error(`${who} is not an account of this server`);
  };
  switch (command) {
    case 'suspend':
      if (account.suspended_at) return out(`${who} was already suspended`);
      await moderation.suspendAccount(deps, account, by);
      return out(`${who} is suspended`);
    case 'unsuspend':
      if (!account.suspended_at) return out(`${who} is not suspended`);
      await moderation.unsuspendAccount(deps, account, by);
      return out(`${who} is no longer suspended`);
    case 'silence':
    case 'unsilence':
      await moderation.setSilenced(deps, account, command === 'silence', by);
      return out(command === 'silence' ? `${who} is silenced` : `${who} is no longer silenced`);
    case 'sensitive':
    case 'unsensitive':
      await moderation.setSensitized(deps, account, command === 'sensitive', by);
      return out(command === 'sensitive' ? `${who}'s posts are marked sensitive` : `${who}'s posts are no longer marked sensitive`);
    case 'disable':
    case 'enable':
      local();
      await moderation.setDisabled(deps, account, command === 'disable', by);
      return out(command === 'disable' ? `${who} is disabled` : `${who} is enabled`);
    case 'reject':
      local();
      try {
        await moderation.rejectAccount(deps, (await findAccountById(deps.db, account.id))!, by);
      } catch {
        throw new Error(`${who} is not waiting for approval`);
      }
      return out(`${who} is rejected and removed`);
    default:
      throw new ModerationUsageError(`unknown command: accounts ${command}`);
  }
}

async function appealCommand(deps: moderation.ModerationDeps, by: Actor, command: string | undefined, id: string | undefined, limit: string | undefined, out: (line: string) => void): Promise<void> {
  switch (command) {
    case 'list': {
      if (limit !== undefined && !/^\d{1,3}$/.test(limit)) throw new ModerationUsageError('--limit takes a number up to 999');
      const rows = await pendingAppeals(deps.db, { limit: Math.max(1, Number(limit ?? 100)) });
      const accounts = new Map((await findAccountsByIds(deps.db, [...new Set(rows.map((a) => a.account_id))])).map((a) => [a.id, a]));
      for (const a of rows) {
        const strike = await findStrike(deps.db, a.account_warning_id);
        const who = accounts.get(a.account_id);
        out(`${a.id}  ${who ? acct(who) : a.account_id}  ${strike?.action ?? '?'}  ${JSON.stringify(a.text)}`);
      }
      if (rows.length === 0) out('no appeals waiting');
      return;
    }
    case 'approve':
    case 'reject': {
      if (!id) throw new ModerationUsageError(`appeals ${command} takes the id of an appeal (see appeals list)`);
      if (!isId(id)) throw new Error(`no appeal with id ${id}`);
      try {
        await (command === 'approve' ? approveAppeal : rejectAppeal)(deps, by, id);
      } catch (err) {
        if (err instanceof ApiError && err.statusCode < 500) throw new Error(err.statusCode === 404 ? `no appeal with id ${id}` : err.message);
        throw err;
      }
      return out(`appeal ${id} ${command === 'approve' ? 'approved: the decision is undone' : 'rejected'}`);
    }
    default:
      throw new ModerationUsageError(`unknown command: appeals ${command ?? ''}`.trim());
  }
}
