// Operator commands: `npm run cli -- <command>`. Uses the same settings (DATABASE_URL…) as the server.
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../config.ts';
import { createPool, ensureDatabase, migrate, type Db } from '../storage/db.ts';
import { findAccountByUsername } from '../storage/accounts.ts';
import { findUserByAccountId, setAdmin, setApproved, setPasswordHash } from '../storage/users.ts';
import { revokeUserTokens } from '../storage/oauth.ts';
import { registerLocalAccount } from '../services/accounts.ts';
import { hashPassword } from '../services/passwords.ts';
import { ApiError, ValidationFailed } from '../errors.ts';
import { createRedis, connectRedis } from '../storage/redis.ts';
import { publishTokenInvalidation, type TokenInvalidation } from '../services/token-cache.ts';
import { featureAccount, listFeatured, unfeatureAccount } from '../storage/suggestions.ts';

const USAGE = `Usage: npm run cli -- <command> [options]

  accounts create <username> --email <email> [--password <pw>] [--admin]
      Creates a local account (approved) and prints its id. Without --password one is generated and printed.
  accounts admin <username> [--revoke]
      Makes the account an admin, or with --revoke takes that away.
  accounts approve <username>
      Approves an account that registered while registrations needed approval.
  accounts reset-password <username> [--password <pw>]
      Sets a new password (generated and printed when not given) and signs the account out of every app.
  suggestions feature <username | username@domain>
      Features an account in everyone's follow suggestions (GET /api/v2/suggestions, source "featured").
  suggestions unfeature <username | username@domain>
      Stops featuring it.
  suggestions list
      Prints the featured accounts, one per line, with what keeps any of them from being suggested.`;

class UsageError extends Error {}

async function localUser(db: Db, username: string | undefined) {
  if (!username) throw new UsageError('a username is required');
  const account = await findAccountByUsername(db, username, null);
  const user = account ? await findUserByAccountId(db, account.id) : null;
  if (!account || !user) throw new Error(`no local account named ${username}`);
  return { account, user };
}

/** Tells running servers that a user's tokens may answer differently now (approval, password reset). */
export type Invalidate = (what: TokenInvalidation) => Promise<void>;

export async function runCli(argv: string[], db: Db, out: (line: string) => void, invalidate: Invalidate): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      password: { type: 'string' },
      admin: { type: 'boolean', default: false },
      revoke: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [group, command, username] = positionals;
  if (values.help || (group !== 'accounts' && group !== 'suggestions') || !command) throw new UsageError(values.help ? '' : 'unknown command');
  if (group === 'suggestions') return suggestionsCommand(db, command, username, out);

  switch (command) {
    case 'create': {
      if (!username) throw new UsageError('a username is required');
      if (!values.email) throw new UsageError('--email is required');
      const password = values.password ?? randomBytes(12).toString('base64url');
      const { account } = await registerLocalAccount(db, {
        username, email: values.email, password, agreement: true, approved: true, admin: values.admin, allowReserved: true,
      });
      out(account.id);
      if (!values.password) out(`password: ${password}`);
      return;
    }
    case 'admin': {
      const { user } = await localUser(db, username);
      await setAdmin(db, user.id, !values.revoke);
      await invalidate({ userId: user.id });
      out(values.revoke ? `${username} is no longer an admin` : `${username} is now an admin`);
      return;
    }
    case 'approve': {
      const { user } = await localUser(db, username);
      await setApproved(db, user.id, true);
      await invalidate({ userId: user.id });
      out(`${username} is approved`);
      return;
    }
    case 'reset-password': {
      const { user } = await localUser(db, username);
      const password = values.password ?? randomBytes(12).toString('base64url');
      if (password.length < 8 || password.length > 72) throw new Error('the password must be 8 to 72 characters');
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

async function main() {
  let db: Db | undefined;
  const config = (() => {
    try {
      return loadConfig();
    } catch (err) {
      console.error(`error: ${(err as Error).message}`);
      process.exit(1);
    }
  })();
  const redis = createRedis(config.redisUrl);
  try {
    await ensureDatabase(config.databaseUrl);
    await migrate(config.databaseUrl);
    await connectRedis(redis, config.redisUrl);
    db = createPool(config.databaseUrl, 2);
    await runCli(process.argv.slice(2), db, (line) => console.log(line), (what) => publishTokenInvalidation(redis, config.redisPrefix, what));
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
