import { addToOutbox } from '../storage/outbox.ts';
import { Application, Group, Image, Link, Organization, PropertyValue, Service, isActor, type Actor } from '@fedify/vocab';
import type { Context } from '@fedify/fedify';
import type { DocumentLoader } from '@fedify/vocab-runtime';
import type { AppContext } from '../context.ts';
import { findAccountByUri, findAccountByUsername, upsertRemoteAccount, type AccountRow, type RemoteAccount } from '../storage/accounts.ts';
import { sanitizeRemoteHtml, escapeHtml } from '../text/render.ts';
import { signedLoader } from './instance-actor.ts';
import { confirmedByWebFinger, fetchById, webFingerSelf } from './fetch-object.ts';
import { boundedItems } from './inbound-limits.ts';
import { domainPolicy } from '../services/domain-policy.ts';
import { afterRemoteActorStored } from './featured.ts';
import { keepVerification, verifyRemoteLinksLater } from '../services/profile-links.ts';
import { receiveRemoteEmojis } from './emojis.ts';

/** How long a stored remote account is shown without asking its server again (a refresh then runs in the background). */
const STALE_AFTER_MS = 24 * 3600 * 1000;

const text = (v: unknown): string => (v == null ? '' : String(v));

/** A link we may hand to clients: http(s) only (a `javascript:` or `data:` URL would be rendered as a link). */
function href(v: URL | Link | null | undefined): string | null {
  const url = v instanceof Link ? v.href : v;
  return url && (url.protocol === 'https:' || url.protocol === 'http:') ? url.href : null;
}

async function imageUrl(get: () => Promise<Image | null>): Promise<string | null> {
  try {
    const image = await get();
    return href(image?.url as URL | Link | null | undefined);
  } catch {
    return null; // a broken image link is no reason to refuse the actor
  }
}

/** The actor's ActivityPub type, as Mastodon keeps it (`actor_type`). */
function actorTypeOf(actor: Actor): string {
  return actor instanceof Group ? 'Group' : actor instanceof Service ? 'Service' : actor instanceof Application ? 'Application'
    : actor instanceof Organization ? 'Organization' : 'Person';
}

/** What we keep of a remote actor. The domain is its id's host (servers that split handle and host domains are rare). */
export async function remoteAccountFrom(actor: Actor): Promise<RemoteAccount | null> {
  if (!actor.id || !actor.preferredUsername) return null;
  const fields = [];
  // Profile fields are read inlined only (one named by id ends the list: boundedItems).
  for (const a of await boundedItems((o) => actor.getAttachments(o), 32)) {
    if (fields.length >= 16) break;
    if (a instanceof PropertyValue) {
      const value = sanitizeRemoteHtml(text(a.value));
      fields.push({ name: escapeHtml(text(a.name)).slice(0, 255), value, value_html: value, verified_at: null });
    }
  }
  return {
    uri: actor.id.href,
    username: text(actor.preferredUsername).slice(0, 255),
    domain: actor.id.host.toLowerCase(),
    displayName: text(actor.name).slice(0, 255),
    noteHtml: sanitizeRemoteHtml(text(actor.summary)),
    url: href(actor.url as URL | Link | null),
    inboxUrl: href(actor.inboxId),
    sharedInboxUrl: href(actor.endpoints?.sharedInbox),
    outboxUrl: actor.outboxId?.href ?? null,
    followersUrl: actor.followersId?.href ?? null,
    locked: actor.manuallyApprovesFollowers ?? false,
    bot: actor instanceof Service || actor instanceof Application,
    actorType: actorTypeOf(actor),
    discoverable: actor.discoverable ?? null,
    avatarUrl: await imageUrl(() => actor.getIcon()),
    headerUrl: await imageUrl(() => actor.getImage()),
    fields,
    createdAt: actor.published ? new Date(actor.published.epochMilliseconds) : null,
    // Account moves: ids only, http(s), a bounded few (a Move is checked against these).
    alsoKnownAs: actor.aliasIds.map((u) => href(u)).filter((u): u is string => u !== null).slice(0, 16),
    movedToUri: href(actor.successorId),
  };
}

/** Stores (or refreshes) a remote actor as an account row, telling caches when it is an update. */
export async function storeRemoteActor(app: AppContext, actor: Actor): Promise<AccountRow | null> {
  const data = await remoteAccountFrom(actor);
  if (!data) return null;
  // A server whose media is rejected has no avatars or headers shown here (Mastodon's reject_media).
  if (await domainPolicy(app).rejectsMedia(data.domain)) Object.assign(data, { avatarUrl: null, headerUrl: null });
  // Our own accounts are never overwritten by what another server says about them.
  if (new URL(data.uri).origin === new URL(app.config.publicUrl).origin) return null;
  // A link stays verified while its field's value is the same (services/profile-links.ts).
  const known = await findAccountByUri(app.db, data.uri);
  if (known) data.fields = keepVerification(known.fields, data.fields);
  await receiveRemoteEmojis(app, actor, data.domain);
  let row: AccountRow;
  try {
    row = await upsertRemoteAccount(app.db, data);
  } catch (err) {
    // Another actor of that server already has the name (a recreated account, or a group beside a user): keep the one
    // we have rather than fail.
    if ((err as { constraint?: string }).constraint === 'accounts_username_domain') return null;
    throw err;
  }
  await app.versions.bump({ accounts: [row.id] });
  // Its links not verified yet are checked against its profile URL, as Mastodon checks other servers' (in a job).
  await verifyRemoteLinksLater(app, row).catch(() => {});
  // Its avatar and header copied here (services/remote-media.ts); a lost job is made up by the media proxy.
  if ((row.avatar_remote_url && !row.avatar_file) || (row.header_remote_url && !row.header_file)) {
    await app.jobs.enqueue(await addToOutbox(app.db, 'cacheAccountImages', { accountId: row.id })).catch(() => {});
  }
  // Its pinned posts: the featured collection, read in the background (federation/featured.ts).
  await afterRemoteActorStored(app, row, actor).catch(() => {});
  return row;
}

/**
 * The account for a remote actor id: the stored row (refreshed in the background when stale), or the actor fetched
 * and stored now. Fetches are signed (`loader`, or the instance actor's when none is given).
 */
export async function accountForActorUri(app: AppContext, fed: Context<AppContext>, uri: string, loader?: DocumentLoader): Promise<AccountRow | null> {
  const stored = await findAccountByUri(app.db, uri);
  if (stored && !isStale(stored)) return stored;
  if (stored) {
    void refreshInBackground(app, fed, uri);
    return stored;
  }
  const fetched = await fetchActor(fed, uri, loader);
  return fetched ? storeRemoteActor(app, fetched) : null;
}

/**
 * The account for `user@domain`, by WebFinger and an actor fetch when not stored yet; the fetch is signed by the
 * local account acting, or by the instance actor.
 */
export async function resolveAcct(app: AppContext, fed: Context<AppContext>, username: string, domain: string, actingAs?: AccountRow | null): Promise<AccountRow | null> {
  const stored = await findAccountByUsername(app.db, username, domain);
  if (stored) {
    if (isStale(stored) && stored.uri) void refreshInBackground(app, fed, stored.uri);
    return stored;
  }
  const actor = await fetchActor(fed, `acct:${username}@${domain}`, await signedLoader(fed, actingAs));
  return actor ? storeRemoteActor(app, actor) : null;
}

function isStale(a: AccountRow): boolean {
  // A deleted actor's row is its tombstone: never fetched again, so nothing brings the actor back.
  return a.domain !== null && !a.deleted_at && (!a.fetched_at || Date.now() - a.fetched_at.getTime() > STALE_AFTER_MS);
}

/**
 * An actor by id or `acct:` handle, fetched with a signed GET (WebFinger itself is never signed). By handle, the id
 * WebFinger names is fetched; by id, WebFinger must name that id back: either way the actor is one its server vouches
 * for, never a document that merely sits there claiming to be one.
 */
export async function fetchActor(fed: Context<AppContext>, idOrHandle: string, loader?: DocumentLoader): Promise<Actor | null> {
  try {
    const documentLoader = loader ?? (await signedLoader(fed));
    if (idOrHandle.startsWith('acct:')) {
      const self = await webFingerSelf(fed, idOrHandle);
      const found = self ? await fetchById(fed, self, documentLoader) : null;
      return isActor(found) ? found : null;
    }
    const found = await fetchById(fed, idOrHandle, documentLoader);
    return isActor(found) && (await confirmedByWebFinger(fed, found)) ? found : null;
  } catch {
    return null; // unreachable, refused, or not an actor: the caller answers "not found"
  }
}

async function refreshInBackground(app: AppContext, fed: Context<AppContext>, uri: string): Promise<void> {
  try {
    // One refresh at a time per actor across processes, and not again within a minute if it fails: every request
    // that meets a stale account would otherwise start one.
    if ((await app.redis.set(`${app.config.redisPrefix}actor-refresh:${uri}`, '1', 'PX', 60_000, 'NX')) !== 'OK') return;
    const actor = await fetchActor(fed, uri);
    if (actor && actor.id?.href === uri) await storeRemoteActor(app, actor);
  } catch {
    // a refresh that fails leaves the stored account as it was
  }
}
