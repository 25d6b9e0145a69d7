import type { AppContext } from '../../context.ts';
import { setAdmin } from '../../storage/users.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';

/** Makes a registered account's user an administrator, as `cli accounts admin` does; its cached tokens learn of it. */
export async function makeAdmin(s: { ctx: AppContext }, account: { id: string }): Promise<void> {
  const { rows } = await s.ctx.db.query<{ id: string }>('SELECT id::text FROM users WHERE account_id = $1', [account.id]);
  await setAdmin(s.ctx.db, rows[0]!.id, true);
  await publishTokenInvalidation(s.ctx.redis, s.ctx.config.redisPrefix, { userId: rows[0]!.id });
}
