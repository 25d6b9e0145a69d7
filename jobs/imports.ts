import type { AppContext } from '../context.ts';
import { transaction } from '../storage/db.ts';
import { addToOutbox } from '../storage/outbox.ts';
import { findAccountById, findAccountByUsername } from '../storage/accounts.ts';
import { findStatus, findStatusByUri } from '../storage/statuses.ts';
import { runImport, type ImportResolver } from '../services/imports.ts';
import { findImport } from '../storage/imports.ts';

/**
 * One run of an import's job (services/imports.ts): a batch of rows, then the next run queued through the outbox,
 * so a long import holds no job for long, keeps no more than a batch in memory, and lets other jobs through.
 */
export async function processImportJob(ctx: AppContext, importId: string): Promise<void> {
  const imp = await findImport(ctx.db, importId);
  if (!imp) return;
  const more = await runImport(ctx, importId, await resolverFor(ctx, imp.account_id));
  if (!more) return;
  const next = await transaction(ctx.db, (tx) => addToOutbox(tx, 'processImport', { importId }));
  await ctx.jobs.enqueue(next).catch(() => {}); // the sweeper queues it otherwise
}

/** Look-ups as search's `resolve=true` does them: WebFinger and a fetch signed by the person importing. */
async function resolverFor(ctx: AppContext, accountId: string): Promise<ImportResolver> {
  const { resolveAcct, fetchActor, storeRemoteActor } = await import('../federation/remote-accounts.ts');
  const { resolveRemoteLink } = await import('../federation/resolve.ts');
  const { signedLoader } = await import('../federation/instance-actor.ts');
  const fed = ctx.federation.createContext(new URL(ctx.config.publicUrl), ctx);
  const actingAs = await findAccountById(ctx.db, accountId);
  // One signing loader for the run's rows: making one imports the account's private key, which is not free.
  let loader: Awaited<ReturnType<typeof signedLoader>> | undefined;
  const ownStatus = new RegExp(`^${ctx.config.publicUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/users/[^/]+/statuses/(\\d{1,19})$`);
  return {
    async account(acct) {
      const at = acct.lastIndexOf('@');
      if (at < 0) return findAccountByUsername(ctx.db, acct, null);
      const username = acct.slice(0, at), domain = acct.slice(at + 1).toLowerCase();
      if (!username || !/^[a-z0-9.-]+(:\d{1,5})?$/.test(domain)) return null;
      // Known: resolveAcct returns it (refreshing it in the background when stale). Unknown: WebFinger, then the actor.
      if (await findAccountByUsername(ctx.db, username, domain)) return resolveAcct(ctx, fed, username, domain, actingAs);
      loader ??= await signedLoader(fed, actingAs);
      const actor = await fetchActor(fed, `acct:${username}@${domain}`, loader);
      return actor ? storeRemoteActor(ctx, actor) : null;
    },
    async status(uri) {
      const own = ownStatus.exec(uri);
      if (own) return findStatus(ctx.db, own[1]!);
      const known = await findStatusByUri(ctx.db, uri);
      if (known) return known;
      if (!actingAs) return null;
      return (await resolveRemoteLink(ctx, uri, actingAs))?.status ?? null;
    },
  };
}
