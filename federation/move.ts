import type { Move } from '@fedify/vocab';
import type { Context, InboxContext } from '@fedify/fedify';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import type { AppContext } from '../context.ts';
import { findAccountByUri, setAlsoKnownAs, type AccountRow } from '../storage/accounts.ts';
import { publishedLocalAccount } from '../services/local-accounts.ts';
import { MAX_ALIASES, startMove } from '../services/account-migration.ts';
import { signedLoader } from './instance-actor.ts';
import { fetchActor, storeRemoteActor } from './remote-accounts.ts';
import { localActor } from './remote-statuses.ts';
import { dropInbound } from './drops.ts';

type Fed = InboxContext<AppContext>;

/** A Move of one account is processed once a week at most (Mastodon's PROCESSING_COOLDOWN); a refused one may come again. */
const PROCESSING_COOLDOWN_S = 7 * 24 * 3600;

/**
 * The account an address names: `user@domain`, a local username (or `user@` our domain), or an actor id. A remote
 * one is read from its server when `fresh` (a move must see the alsoKnownAs of now), else the stored row will do.
 */
export async function resolveAccountAddress(app: AppContext, address: string, actingAs: AccountRow, opts: { fresh: boolean }): Promise<AccountRow | null> {
  const fed = app.federation.createContext(new URL(app.config.publicUrl), app);
  if (/^https?:\/\//i.test(address)) {
    if (!URL.canParse(address)) return null;
    const url = new URL(address);
    if (url.origin === new URL(app.config.publicUrl).origin) {
      const parsed = fed.parseUri(url);
      return parsed?.type === 'actor' ? publishedLocalAccount(app, parsed.identifier) : null;
    }
    if (!opts.fresh) {
      const known = await findAccountByUri(app.db, url.href);
      if (known) return known;
    }
    const loader = await signedLoader(fed, actingAs);
    const actor = await fetchActor(fed, url.href, loader);
    return actor ? withServedAliases(app, await storeRemoteActor(app, actor), loader) : null;
  }
  const m = /^([A-Za-z0-9_.-]{1,100})(?:@([A-Za-z0-9.:-]{1,255}))?$/.exec(address);
  if (!m) return null;
  const [, username, domain] = m;
  if (!domain || domain.toLowerCase() === app.config.localDomain.toLowerCase()) return publishedLocalAccount(app, username!);
  if (!opts.fresh) {
    const { resolveAcct } = await import('./remote-accounts.ts');
    return resolveAcct(app, fed, username!, domain.toLowerCase(), actingAs);
  }
  const loader = await signedLoader(fed, actingAs);
  const actor = await fetchActor(fed, `acct:${username}@${domain.toLowerCase()}`, loader);
  return actor ? withServedAliases(app, await storeRemoteActor(app, actor), loader) : null;
}

/**
 * GoToSocial (0.19) defines `alsoKnownAs` in its actors' own context without `"@type": "@id"`, so JSON-LD reads the
 * aliases as plain strings, which Fedify's `aliasIds` leaves out, while Mastodon reads the document as served. Where a
 * freshly fetched actor shows no alias, its document is read as served and the http(s) strings there are its aliases.
 */
async function withServedAliases(app: AppContext, row: AccountRow | null, loader: DocumentLoader): Promise<AccountRow | null> {
  if (!row || row.domain === null || !row.uri || row.also_known_as.length > 0) return row;
  const served = await loader(row.uri).then((r) => r.document as { id?: unknown; alsoKnownAs?: unknown }, () => null);
  if (!served || served.id !== row.uri) return row;
  const raw = Array.isArray(served.alsoKnownAs) ? served.alsoKnownAs : [served.alsoKnownAs];
  const uris = [...new Set(raw.filter((u): u is string => typeof u === 'string' && /^https?:\/\//i.test(u) && URL.canParse(u)))].slice(0, MAX_ALIASES);
  if (uris.length === 0) return row;
  await setAlsoKnownAs(app.db, row.id, uris);
  return { ...row, also_known_as: uris };
}

/** The account an actor id names, ours from storage, a remote one fetched afresh (its alsoKnownAs as it is now). */
async function freshAccount(fed: Context<AppContext>, uri: URL): Promise<AccountRow | null> {
  if (uri.origin === new URL(fed.data.config.publicUrl).origin) return localActor(fed as Fed, uri);
  const loader = await signedLoader(fed);
  const actor = await fetchActor(fed, uri.href, loader);
  return actor && actor.id?.href === uri.href ? withServedAliases(fed.data, await storeRemoteActor(fed.data, actor), loader) : null;
}

/**
 * A Move from a remote account (Mastodon's ActivityPub::Activity::Move): only of itself, to a target that, read
 * afresh from its server, lists the mover in its alsoKnownAs. Then the mover points at the target and its followers
 * here follow the target (jobs/account-move.ts).
 */
export async function onMove(fed: Fed, move: Move, origin: AccountRow): Promise<void> {
  const app = fed.data;
  if (!origin.uri || move.objectId?.href !== origin.uri) return dropInbound(app, move, 'refused', `it moves ${move.objectId?.href ?? 'nothing'}, not its own actor`);
  const targetUri = move.targetId;
  if (!targetUri) return dropInbound(app, move, 'refused', 'it names no target');
  const key = `${app.config.redisPrefix}move-in-progress:{${origin.id}}`;
  if ((await app.redis.set(key, '1', 'EX', PROCESSING_COOLDOWN_S, 'NX')) !== 'OK') {
    return dropInbound(app, move, 'refused', `a move of ${origin.uri} was processed within the last week`, { quiet: true });
  }
  try {
    const target = await freshAccount(fed, targetUri);
    const problem = !target ? `its target ${targetUri.href} could not be fetched`
      : target.suspended_at ? `its target ${targetUri.href} is suspended`
        : target.id === origin.id ? 'it moves to itself'
          : !target.also_known_as.includes(origin.uri) ? `its target ${targetUri.href} does not list ${origin.uri} in alsoKnownAs` : null;
    if (problem) {
      // Logged (at warn) and counted by dropInbound; a later Move, once the alias is there, is processed.
      await app.redis.del(key);
      return dropInbound(app, move, 'refused', problem);
    }
    await startMove(app, origin, target!, {});
  } catch (err) {
    await app.redis.del(key).catch(() => {});
    throw err;
  }
}
