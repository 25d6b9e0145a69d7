// Operator commands: `npm run cli -- <command>`. Uses the same settings (DATABASE_URL…) as the server.
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { ConfigError, databaseDirectSetting, loadConfig } from '../config.ts';
import { createPool, ensureDatabase, migrate, type Db } from '../storage/db.ts';
import { withoutNamedStatements } from '../storage/pooler.ts';
import { findAccountByUsername } from '../storage/accounts.ts';
import { findUserByAccountId, setApproved, setPasswordHash, type UserRoleSummary } from '../storage/users.ts';
import { findRoleByName, roleHasUsers } from '../storage/roles.ts';
import { can, permissionForCommand } from '../services/roles.ts';
import type { Actor } from '../services/action-log.ts';
import { assignRole } from '../services/role-assignment.ts';
import { revokeUserTokens } from '../storage/oauth.ts';
import { registerLocalAccount } from '../services/accounts.ts';
import { listIdentities } from '../storage/identities.ts';
import { startAccountDeletion } from '../services/account-deletion.ts';
import { CacheVersions } from '../storage/cache-versions.ts';
import { hashPassword, PASSWORD_LENGTH, setPasswordHashCost } from '../services/passwords.ts';
import { ApiError, ValidationFailed } from '../errors.ts';
import { createRedis, connectRedis } from '../storage/redis.ts';
import { publishTokenInvalidation, type TokenInvalidation } from '../services/token-cache.ts';
import { featureAccount, listFeatured, unfeatureAccount } from '../storage/suggestions.ts';
import { listRules } from '../storage/rules.ts';
import { addRule, changeRule, moveRule, removeRule, RuleRefused, type RuleDeps } from '../services/rules.ts';
import { isId } from '../storage/ids.ts';
import { isModerationCommand, moderationCommand, ModerationUsageError, MODERATION_USAGE } from './moderation.ts';
import { domainsCommand, DomainsUsageError, DOMAINS_USAGE, type DomainsCliDeps } from './domains.ts';
import { federationCommand, FederationUsageError, FEDERATION_USAGE } from './federation.ts';
import { mediaCommand, MediaUsageError, MEDIA_USAGE } from './media.ts';
import type { Config } from '../config.ts';
import { relaysCommand, RelaysUsageError, RELAYS_USAGE } from './relays.ts';
import { rolesCommand, RolesUsageError, ROLES_USAGE } from './roles.ts';
import { statusesCommand, StatusesUsageError, STATUSES_USAGE } from './statuses.ts';
import { emojiCommand, EmojiUsageError, EMOJI_USAGE } from './emoji.ts';
import { announcementsCommand, AnnouncementsUsageError, ANNOUNCEMENTS_USAGE } from './announcements.ts';
import { createFileHost, type FileHost } from '../storage/filehost/index.ts';
import { webhooksCommand, WebhooksUsageError, WEBHOOKS_USAGE } from './webhooks.ts';
import { backup, BackupFailed, BACKUP_USAGE, restore } from './backup.ts';

const USAGE = `Usage: npm run cli -- <command> [options]

Any command may be run for an operator with --as <username>: it is then refused unless that operator's role has
the permission the command needs (the same as the operators' API and pages: services/roles.ts).

  accounts create <username> --email <email> [--password <pw>] [--admin | --role <role name>]
      Creates a local account (approved) and prints its id. Without --password one is generated and printed.
      --admin makes the first operator the Owner and any later one an Admin; --role gives a role by name.
      A name the username blocks refuse is refused here too ("is reserved"); one a block would hold for approval
      is made approved all the same, the operator making it being the one who approves.
  accounts role <username> <role name | none>
      Gives the account a role (Owner, Admin, Moderator or one of the server's own), or takes its role away. It
      applies at once in every running server.
  accounts admin <username> [--revoke]
      Gives the account the Admin role, or with --revoke takes its role away.
  accounts approve <username>
      Approves an account that registered while registrations needed approval.
  accounts reset-password <username> [--password <pw>]
      Sets a new password (generated and printed when not given) and signs the account out of every app.
  accounts identities [--limit=<n>]
      Prints who signs in through the single sign-on provider, most recently linked first (50 unless --limit, at
      most 1000): username, provider, the provider's id for them, when it was linked.
  accounts delete <username | username@domain>
      Deletes an account as its owner would: suspended and signed out at once, then its data removed (and a local
      one's Delete sent to the servers that know it) by a running server's worker. Its name stays reserved.
  rules add <text> [--hint <text>] [--priority=<n>]
      Adds a rule of this server (shown in the instance entity and /api/v1/instance/rules) and prints its id.
      Rules are shown by priority (lowest first, 0 by default), then in the order they were added.
  rules list
      Prints the rules in the order they are shown: id, text, and the hint in parentheses.
  rules edit <id> <text> [--hint <text>]
      Changes a rule's text and hint (none unless given).
  rules move <id> <up | down>
      Moves a rule one place up or down the order they are shown in (numbering their priorities 0, 1, 2…).
  rules remove <id>
      Removes a rule.
  suggestions feature <username | username@domain>
      Features an account in everyone's follow suggestions (GET /api/v2/suggestions, source "featured").
  suggestions unfeature <username | username@domain>
      Stops featuring it.
  suggestions list
      Prints the featured accounts, one per line, with what keeps any of them from being suggested.
${ANNOUNCEMENTS_USAGE}
${WEBHOOKS_USAGE}
${EMOJI_USAGE}
${MODERATION_USAGE}
${DOMAINS_USAGE}
${FEDERATION_USAGE}
${MEDIA_USAGE}
${RELAYS_USAGE}
${ROLES_USAGE}
${STATUSES_USAGE}
${BACKUP_USAGE}`;

class UsageError extends Error {}

/** Whether no one holds the Owner role yet: the first operator the CLI makes is the Owner. */
async function firstOperator(db: Db): Promise<boolean> {
  const owner = await findRoleByName(db, 'Owner');
  return owner !== null && !(await roleHasUsers(db, owner.id));
}

/** The usage entries (a command line and its indented description) of USAGE, in order. */
/** Where USAGE's commands start: before it, the line that says how to run it and the note on `--as`. */
const FIRST_COMMAND = USAGE.indexOf('\n  accounts create') + 1;

function usageEntries(): { head: string; text: string }[] {
  const entries: { head: string; text: string }[] = [];
  for (const line of USAGE.slice(FIRST_COMMAND).split('\n')) {
    if (/^  \S/.test(line)) entries.push({ head: line.trim(), text: line });
    else if (entries.length > 0) entries[entries.length - 1]!.text += `\n${line}`;
  }
  return entries;
}

/** The commands USAGE describes, as `group command` pairs (`accounts suspend`, `reports resolve`, …). */
export function cliCommands(): string[] {
  const commands: string[] = [];
  for (const { head } of usageEntries()) {
    // "accounts suspend|unsuspend <…>" and "reports resolve <id> / reports reopen <id>" name several.
    for (const part of head.split(' / ')) {
      const [group, names] = part.split(/\s+/);
      for (const name of (names ?? '').split('|')) commands.push(`${group} ${name}`);
    }
  }
  return commands;
}

/**
 * What `--help` (or `-h`, `help`, or no command at all) prints, without touching PostgreSQL or Redis: the entries of
 * the command asked about, else of its group, else everything. null when argv asks for no help.
 */
export function cliHelp(argv: string[]): string | null {
  const words = argv.filter((a) => a !== '--help' && a !== '-h' && a !== 'help');
  if (words.length === argv.length && argv.length > 0) return null;
  const [group, command] = words;
  const entries = usageEntries();
  const names = (head: string) => head.split(' / ').map((part) => part.split(/\s+/)).filter(([g]) => g === group).flatMap(([, n]) => (n ?? '').split('|'));
  const ofCommand = entries.filter((e) => command !== undefined && names(e.head).includes(command));
  const ofGroup = entries.filter((e) => names(e.head).length > 0);
  const chosen = ofCommand.length > 0 ? ofCommand : ofGroup.length > 0 ? ofGroup : entries;
  return `${USAGE.slice(0, FIRST_COMMAND)}${chosen.map((e) => e.text).join('\n')}`;
}

async function localUser(db: Db, username: string | undefined) {
  if (!username) throw new UsageError('a username is required');
  const account = await findAccountByUsername(db, username, null);
  const user = account ? await findUserByAccountId(db, account.id) : null;
  if (!account || !user) throw new Error(`no local account named ${username}`);
  return { account, user };
}

/** Tells running servers that a user's tokens may answer differently now (approval, password reset). */
export type Invalidate = (what: TokenInvalidation) => Promise<void>;

export async function runCli(argv: string[], db: Db, out: (line: string) => void, invalidate: Invalidate, services?: Omit<DomainsCliDeps, 'db'> & { config?: Config; fileHost?: FileHost }): Promise<void> {
  const actor = await actingOperator(db, argv);
  if (actor) argv = actor.argv;
  return runCommand(argv, db, out, invalidate, services, actor?.role, actor?.accountId ?? null);
}

/**
 * `--as <username>` (anywhere in the command): the command runs for that operator, and only if their role has the
 * permission services/roles.ts names for it. Without it, the command is the shell's operator's, who may do all.
 */
async function actingOperator(db: Db, argv: string[]): Promise<{ argv: string[]; role: UserRoleSummary | null; accountId: string } | null> {
  const at = argv.findIndex((a) => a === '--as' || a.startsWith('--as='));
  if (at < 0) return null;
  const name = argv[at]!.startsWith('--as=') ? argv[at]!.slice('--as='.length) : argv[at + 1];
  if (!name) throw new UsageError('--as takes a username');
  const rest = argv.filter((_, i) => i !== at && (argv[at]!.startsWith('--as=') || i !== at + 1));
  const { user, account } = await localUser(db, name);
  const permission = permissionForCommand(rest);
  if (!permission) throw new UsageError(`${rest.slice(0, 2).join(' ')} is not a command run for an operator`);
  if (!can(user.role?.permissions, permission)) throw new Error(`not allowed: ${name}'s role lacks ${permission}`);
  return { argv: rest, role: user.role, accountId: account.id };
}

async function runCommand(argv: string[], db: Db, out: (line: string) => void, invalidate: Invalidate, services: (Omit<DomainsCliDeps, 'db'> & { config?: Config; fileHost?: FileHost }) | undefined, actorRole: UserRoleSummary | null | undefined,
  /** The audit log's actor: the --as operator's account, or null for the shell's operator. */
  actor: Actor): Promise<void> {
  if (argv[0] === 'emoji' && !argv.includes('--help') && !argv.includes('-h')) {
    if (!services || (!services.fileHost && !services.config)) throw new Error('emoji commands need Redis and the file host');
    const fileHost = services.fileHost ?? (await createFileHost(services.config!, db));
    try {
      const remote = services.config ? { config: services.config, redis: services.redis } : undefined;
      return await emojiCommand(argv.slice(1), { db, fileHost, versions: new CacheVersions(services.redis, services.redisPrefix), actor, ...(remote ? { remote } : {}) }, out);
    } catch (err) {
      throw err instanceof EmojiUsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? new UsageError((err as Error).message) : err;
    } finally {
      if (!services.fileHost) fileHost.close?.();
    }
  }
  if (argv[0] === 'announcements' && !argv.includes('--help') && !argv.includes('-h')) {
    if (!services) throw new Error('announcement commands need Redis');
    try {
      return await announcementsCommand(argv.slice(1), { db, redis: services.redis, redisPrefix: services.redisPrefix, actor }, out);
    } catch (err) {
      throw err instanceof AnnouncementsUsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? new UsageError((err as Error).message) : err;
    }
  }
  if (argv[0] === 'webhooks' && !argv.includes('--help') && !argv.includes('-h')) {
    try {
      return await webhooksCommand(argv.slice(1), { db, actor }, out);
    } catch (err) {
      throw err instanceof WebhooksUsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? new UsageError((err as Error).message) : err;
    }
  }
  if (argv[0] === 'federation' && !argv.includes('--help') && !argv.includes('-h')) {
    if (!services?.config) throw new Error('federation commands need the settings');
    try {
      return await federationCommand(argv.slice(1), { db, config: services.config }, out);
    } catch (err) {
      throw err instanceof FederationUsageError ? new UsageError(err.message) : err;
    }
  }
  if (argv[0] === 'media' && !argv.includes('--help') && !argv.includes('-h')) {
    if (!services?.config) throw new Error('media commands need the settings');
    try {
      return await mediaCommand(argv.slice(1), { db, redis: services.redis, config: services.config }, out);
    } catch (err) {
      throw err instanceof MediaUsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? new UsageError((err as Error).message) : err;
    }
  }
  if (argv[0] === 'roles' && !argv.includes('--help') && !argv.includes('-h')) {
    if (!services) throw new Error('role commands need Redis');
    try {
      return await rolesCommand(argv.slice(1), { db, versions: new CacheVersions(services.redis, services.redisPrefix), invalidate }, actorRole, out, actor);
    } catch (err) {
      throw err instanceof RolesUsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? new UsageError((err as Error).message) : err;
    }
  }
  if (argv[0] === 'statuses' && !argv.includes('--help') && !argv.includes('-h')) {
    if (!services) throw new Error('statuses commands need Redis');
    try {
      // No job queue here: a running server's outbox sweeper takes the feeds' part of each removal.
      if (!services.fileHost && !services.config) throw new Error('statuses commands need the file host');
      const fileHost = services.fileHost ?? (await createFileHost(services.config!, db));
      try {
        return await statusesCommand(argv.slice(1), { db, versions: new CacheVersions(services.redis, services.redisPrefix), jobs: null, fileHost }, out);
      } finally {
        if (!services.fileHost) fileHost.close?.();
      }
    } catch (err) {
      throw err instanceof StatusesUsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? new UsageError((err as Error).message) : err;
    }
  }
  if (argv[0] === 'relay' && !argv.includes('--help') && !argv.includes('-h')) {
    if (!services?.config) throw new Error('relay commands need the settings and Redis');
    try {
      return await relaysCommand(argv.slice(1), { db, redis: services.redis, config: services.config, actor }, out);
    } catch (err) {
      throw err instanceof RelaysUsageError ? new UsageError(err.message) : err;
    }
  }
  if (argv[0] === 'domains' && services && !argv.includes('--help') && !argv.includes('-h')) {
    try {
      return await domainsCommand(argv.slice(1), { db, ...services, actor }, out);
    } catch (err) {
      throw err instanceof DomainsUsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? new UsageError((err as Error).message) : err;
    }
  }
  if (isModerationCommand(argv) && !argv.includes('--help') && !argv.includes('-h')) {
    if (!services) throw new Error('moderation commands need Redis');
    try {
      return await moderationCommand(argv, { db, invalidate, ...services, actor }, out);
    } catch (err) {
      throw err instanceof ModerationUsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? new UsageError((err as Error).message) : err;
    }
  }
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      password: { type: 'string' },
      admin: { type: 'boolean', default: false },
      role: { type: 'string' },
      revoke: { type: 'boolean', default: false },
      hint: { type: 'string' },
      priority: { type: 'string' },
      limit: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [group, command, username] = positionals;
  if (group === 'rules' && command && !values.help) return rulesCommand({ db, redis: services?.redis, redisPrefix: services?.redisPrefix }, command, positionals.slice(2), values, out, actor);
  if (values.help || (group !== 'accounts' && group !== 'suggestions') || !command) throw new UsageError(values.help ? '' : 'unknown command');
  if (group === 'suggestions') return suggestionsCommand(db, command, username, out);

  switch (command) {
    case 'create': {
      if (!username) throw new UsageError('a username is required');
      if (!values.email) throw new UsageError('--email is required');
      if (values.admin && values.role) throw new UsageError('--admin and --role do not go together');
      const role = values.role ?? (values.admin ? ((await firstOperator(db)) ? 'Owner' : 'Admin') : null);
      if (role !== null) {
        const row = await findRoleByName(db, role);
        if (!row) throw new UsageError(`no role named ${role}`);
        if (actorRole !== undefined && !can(actorRole?.permissions, 'administrator') && !(actorRole && row.position < actorRole.position)) {
          throw new Error('not allowed: that role is not yours to give');
        }
      }
      const password = values.password ?? randomBytes(12).toString('base64url');
      const { account } = await registerLocalAccount(db, {
        username, email: values.email, password, agreement: true, approved: true, role, allowReserved: true, confirmed: true,
      });
      out(account.id);
      if (!values.password) out(`password: ${password}`);
      return;
    }
    case 'admin':
    case 'role': {
      if (!services) throw new Error('changing a role needs Redis');
      const { user, account } = await localUser(db, username);
      const [, , , roleArg, extra] = positionals;
      if (command === 'role' && (!roleArg || extra !== undefined)) throw new UsageError('accounts role takes a username and a role name (or none)');
      const roleName = command === 'admin' ? (values.revoke ? null : 'Admin') : roleArg === 'none' ? null : roleArg!;
      const deps = { db, versions: new CacheVersions(services.redis, services.redisPrefix), invalidate };
      const role = await assignRole(deps, { userId: user.id, accountId: account.id, role: user.role }, roleName, actorRole, { by: actor, acct: username! });
      out(role ? `${username} is now ${role.name}` : `${username} has no role now`);
      return;
    }
    case 'approve': {
      const { user } = await localUser(db, username);
      await setApproved(db, user.id, true);
      await invalidate({ userId: user.id });
      out(`${username} is approved`);
      return;
    }
    case 'delete': {
      if (!services) throw new Error('deleting an account needs Redis');
      const account = await accountByName(db, username);
      if (account.deleted_at) throw new Error(`${acct(account)} is already deleted`);
      // No job queue here: the first run of the deletion waits in the outbox for a running server's sweeper.
      await startAccountDeletion({ db, versions: new CacheVersions(services.redis, services.redisPrefix), invalidate, jobs: null }, account, { by: actor });
      out(`${acct(account)} is suspended; its data is being deleted`);
      return;
    }
    case 'identities': {
      const limit = values.limit === undefined ? 50 : Number(values.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit takes a number from 1 to 1000');
      const rows = await listIdentities(db, limit);
      if (rows.length === 0) out('nobody signs in through a provider');
      for (const r of rows) out(`${r.username}\t${r.provider}\t${r.uid}\tlinked ${r.created_at.toISOString().slice(0, 10)}`);
      return;
    }
    case 'reset-password': {
      const { user } = await localUser(db, username);
      const password = values.password ?? randomBytes(12).toString('base64url');
      if (password.length < PASSWORD_LENGTH.min || password.length > PASSWORD_LENGTH.max) throw new Error(`the password must be ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters`);
      await setPasswordHash(db, user.id, await hashPassword(password));
      const revoked = await revokeUserTokens(db, user.id);
      await invalidate({ userId: user.id });
      out(values.password ? `password changed; ${revoked} token(s) revoked` : `password: ${password}\n${revoked} token(s) revoked`);
      return;
    }
    default:
      throw new UsageError(`unknown command: accounts ${command}`);
  }
}

/** An account of this server (`alice`) or one of another server already known here (`bob@example.com`). */
async function accountByName(db: Db, name: string | undefined) {
  if (!name) throw new UsageError('an account name is required');
  const [username, domain] = name.replace(/^@/, '').split('@', 2) as [string, string | undefined];
  const account = await findAccountByUsername(db, username, domain ?? null);
  if (!account) throw new Error(`no account named ${name}`);
  return account;
}

const acct = (a: { username: string; domain: string | null }) => (a.domain ? `${a.username}@${a.domain}` : a.username);

async function suggestionsCommand(db: Db, command: string, name: string | undefined, out: (line: string) => void): Promise<void> {
  switch (command) {
    case 'feature': {
      const account = await accountByName(db, name);
      const added = await featureAccount(db, account.id);
      out(added ? `${acct(account)} is featured in suggestions` : `${acct(account)} was already featured`);
      if (account.discoverable === false) out(`note: ${acct(account)} has opted out of discovery and will not be suggested`);
      return;
    }
    case 'unfeature': {
      const account = await accountByName(db, name);
      const removed = await unfeatureAccount(db, account.id);
      out(removed ? `${acct(account)} is no longer featured` : `${acct(account)} was not featured`);
      return;
    }
    case 'list': {
      for (const f of await listFeatured(db)) {
        const why = [f.suspended && 'suspended', !f.approved && 'not approved', f.discoverable === false && 'opted out of discovery'].filter(Boolean);
        out(why.length ? `${acct(f)} (not suggested: ${why.join(', ')})` : acct(f));
      }
      return;
    }
    default:
      throw new UsageError(`unknown command: suggestions ${command}`);
  }
}

async function rulesCommand(deps: RuleDeps, command: string, args: string[], options: { hint?: string | undefined; priority?: string | undefined }, out: (line: string) => void, by: Actor): Promise<void> {
  const refusal = (err: unknown) => (err instanceof RuleRefused ? new Error(err.missing ? `no rule with id ${args[0]}` : err.message.replace(/^A /, 'a ').replace(/\.$/, '')) : err);
  switch (command) {
    case 'add': {
      if (args.length !== 1) throw new UsageError('rules add takes the rule as one argument (quote it)');
      if (options.priority !== undefined && !/^-?\d{1,6}$/.test(options.priority)) throw new UsageError('--priority takes a whole number');
      try {
        const rule = await addRule(deps, { text: args[0]!, hint: options.hint ?? '', priority: Number(options.priority ?? 0) }, by);
        out(rule.id);
      } catch (err) {
        throw refusal(err);
      }
      return;
    }
    case 'list': {
      for (const r of await listRules(deps.db)) out(r.hint ? `${r.id}  ${r.text}  (${r.hint})` : `${r.id}  ${r.text}`);
      return;
    }
    case 'edit': {
      const [id, text] = args;
      if (!id || text === undefined || args.length !== 2) throw new UsageError('rules edit takes the id of a rule and its new text as one argument');
      try {
        if (!isId(id)) throw new RuleRefused('', true);
        await changeRule(deps, id, { text, hint: options.hint ?? '' }, by);
      } catch (err) {
        throw refusal(err);
      }
      out(`rule ${id} changed`);
      return;
    }
    case 'move': {
      const [id, direction] = args;
      if (!id || (direction !== 'up' && direction !== 'down')) throw new UsageError('rules move takes the id of a rule and up or down');
      try {
        if (!isId(id)) throw new RuleRefused('', true);
        await moveRule(deps, id, direction, by);
      } catch (err) {
        throw refusal(err);
      }
      out(`rule ${id} moved ${direction}`);
      return;
    }
    case 'remove': {
      const id = args[0];
      if (!id) throw new UsageError('rules remove takes the id of a rule (see rules list)');
      try {
        if (!isId(id)) throw new RuleRefused('', true);
        await removeRule(deps, id, by);
      } catch (err) {
        throw refusal(err);
      }
      out(`rule ${id} removed`);
      return;
    }
    default:
      throw new UsageError(`unknown command: rules ${command}`);
  }
}

/**
 * `backup <dir>` and `restore <dir> [--force]`: before the database is made or migrated (a restore goes into an empty
 * one), so they run apart from the other commands. Returns the exit status.
 */
export async function backupCommand(config: Config, argv: string[]): Promise<number> {
  let parsed: { values: { force?: boolean }; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { force: { type: 'boolean', default: false } } });
  } catch (err) {
    console.error(`error: ${(err as Error).message}\n\n${BACKUP_USAGE}`);
    return 1;
  }
  const { values, positionals } = parsed;
  const [command, dir, extra] = positionals;
  if (!dir || extra !== undefined || (command === 'backup' && values.force)) {
    console.error(`error: ${command ?? argv[0]} takes one directory${command === 'restore' ? ' (and --force)' : ''}\n\n${BACKUP_USAGE}`);
    return 1;
  }
  const redis = command === 'restore' ? createRedis(config) : null;
  try {
    if (redis) await connectRedis(redis, config);
    if (command === 'backup') await backup(config, dir, (line) => console.log(line));
    else await restore(config, dir, { force: values.force ?? false }, redis!, (line) => console.log(line));
    return 0;
  } catch (err) {
    console.error(`error: ${err instanceof BackupFailed || err instanceof ConfigError ? err.message : ((err as Error).message ?? err)}`);
    return 1;
  } finally {
    redis?.disconnect();
  }
}

async function main() {
  const help = cliHelp(process.argv.slice(2));
  if (help !== null) {
    console.log(help);
    return;
  }
  let db: Db | undefined;
  const config = (() => {
    try {
      return loadConfig();
    } catch (err) {
      console.error(`error: ${(err as Error).message}`);
      process.exit(1);
    }
  })();
  setPasswordHashCost(config.passwordHash);
  if (process.argv[2] === 'backup' || process.argv[2] === 'restore') {
    process.exitCode = await backupCommand(config, process.argv.slice(2));
    return;
  }
  const redis = createRedis(config);
  try {
    await ensureDatabase(config.databaseDirectUrl, databaseDirectSetting(config));
    await migrate(config.databaseDirectUrl);
    await connectRedis(redis, config);
    db = createPool(config.databaseUrl, 2);
    if (!config.preparedStatements) withoutNamedStatements(db);
    await runCli(process.argv.slice(2), db, (line) => console.log(line), (what) => publishTokenInvalidation(redis, config.redisPrefix, what), { redis, redisPrefix: config.redisPrefix, config });
  } catch (err) {
    if (err instanceof UsageError) {
      if (err.message) console.error(`error: ${err.message}\n`);
      console.error(USAGE);
    } else if (err instanceof ConfigError || err instanceof ApiError || err instanceof ValidationFailed) {
      console.error(`error: ${err.message}`);
    } else {
      console.error(`error: ${(err as Error).message ?? err}`);
    }
    process.exitCode = 1;
  } finally {
    await db?.end();
    redis.disconnect();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
