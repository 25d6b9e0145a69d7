import { createExponentialBackoffPolicy, createFederation, type Context, type RequestContext } from '@fedify/fedify';
import { Create, Emoji, Hashtag, Note, QuoteAuthorization, Tombstone, type Announce } from '@fedify/vocab';
import { StatusCreate } from './media-terms.ts';
import { findLocalEmojiById } from '../storage/custom-emojis.ts';
import { emojiObjectOf } from './emojis.ts';
import { featuredTagsOf } from '../storage/featured-tags.ts';
import type { AppContext, AppFederation } from '../context.ts';
import { findAccountById, findAccountByUsername, type AccountRow } from '../storage/accounts.ts';
import { publishedLocalAccount, signingLocalAccount } from '../services/local-accounts.ts';
import { accountStatusIds, findStatus } from '../storage/statuses.ts';
import { instanceStats, activeUsers } from '../storage/instance.ts';
import { followersPage, followingPage } from '../storage/follows.ts';
import { accountUri, statusUri } from '../services/uris.ts';
import { RedisKvStore } from './kv.ts';
import { storableRemoteInput } from './storable-documents.ts';
import { withReceivedJson } from './received-json.ts';
import { isId } from '../storage/ids.ts';
import type { BullMqMessageQueue } from './queue.ts';
import { interactionLinks } from './interaction-links.ts';
import { announceOf, personOf, quoteAuthorizationOf, recipientOf, statusObjectOf } from './objects.ts';
import { findQuote } from '../storage/quotes.ts';
import { registerInboxListeners } from './inbox.ts';
import { routeFedifyLogs } from './logging.ts';
import { INSTANCE_ACTOR, instanceActorOf, namesInstanceActor } from './instance-actor.ts';
import { signedRequester } from './signed-requests.ts';
import { CavageFirstKvStore } from './signature-specs.ts';
import { featuredItems } from './featured.ts';
import { mayServeStatus, setRepliesDispatcher } from './replies.ts';
import { healthOf } from './health.ts';
import { healthMeterProvider, recordDeliveryError } from './meter.ts';
import { metricsOf } from '../services/metrics.ts';

const PAGE = 40;
const PAGE_OF_STATUSES = 20;

/** A status of the outbox as the activity that published it. */
async function activityOf(fed: Context<AppContext>, account: AccountRow, id: string): Promise<Create | Announce | null> {
  const status = await findStatus(fed.data.db, id);
  if (!status) return null;
  const uri = new URL(statusUri(fed.data.render, status, account.username));
  if (status.reblog_of_id) {
    const original = await findStatus(fed.data.db, status.reblog_of_id);
    const author = original ? await findAccountById(fed.data.db, original.account_id) : null;
    if (!original || !author || (original.visibility !== 'public' && original.visibility !== 'unlisted')) return null;
    return announceOf(fed, account, status, author, original);
  }
  const { note } = await statusObjectOf(fed, account, status);
  return new StatusCreate({ id: new URL(`${uri.href}/activity`), actor: fed.getActorUri(account.username), object: note, tos: note.toIds, ccs: note.ccIds, published: note.published });
}

/**
 * The ActivityPub side of the server (Fedify): actors, their collections, statuses as Notes, WebFinger and NodeInfo,
 * and inboxes. Routes are Mastodon's (/users/:username, /users/:username/statuses/:id, /inbox), so links other
 * servers already hold keep working.
 */
export function createAppFederation(app: AppContext, queue: BullMqMessageQueue): AppFederation {
  routeFedifyLogs(app.config.logLevel);
  const federation = createFederation<AppContext>({
    // The spec each server takes is shown per server (federation/health.ts).
    kv: new CavageFirstKvStore(new RedisKvStore(app.redis, app.config.redisPrefix), (origin, spec) => {
      if (URL.canParse(origin)) healthOf(app).signatureSpec(new URL(origin).host, spec);
    }),
    // Every server we know verifies draft-cavage; snac and older ones verify nothing else, and snac answers 202
    // before checking, so an RFC 9421 first knock would never fall back (signature-specs.ts).
    firstKnock: 'draft-cavage-http-signatures-12',
    queue,
    // Only worker processes run the queue (server.ts starts it); web processes only put work on it.
    manuallyStartQueue: true,
    origin: app.config.publicUrl,
    allowPrivateAddress: app.config.allowPrivateAddresses,
    userAgent: { software: `fedi-server/${app.config.softwareVersion}`, url: new URL(app.config.publicUrl) },
    // At least a day of attempts: by default 30 s doubling to 6 h, 16 attempts (about 44 hours in all).
    outboxRetryPolicy: createExponentialBackoffPolicy({
      initialDelay: { milliseconds: app.config.deliveryRetryBaseMs }, factor: 2, maxDelay: { hours: 6 }, maxAttempts: 16,
    }),
    // A server that keeps failing is not hammered: its deliveries are held, and it is probed again after ten times
    // the first retry wait (5 minutes by default); held deliveries are kept for a week.
    circuitBreaker: { recoveryDelay: { milliseconds: app.config.deliveryRetryBaseMs * 10 }, heldActivityTtl: { days: 7 } },
    // Per-server health and metrics: deliveries and fetches as Fedify measures them, and why deliveries failed.
    meterProvider: healthMeterProvider(app),
    onOutboxError: (error) => recordDeliveryError(app, error),
  });
  queue.onJobFinished = (outcome) => metricsOf(app).count('jobs', 'federation', outcome);

  /** A local account deleted for good (services/account-deletion.ts): its name stays, its actor is a Tombstone. */
  const deletedLocalAccount = async (ctx: AppContext, username: string) => {
    const account = await findAccountByUsername(ctx.db, username, null);
    return account?.deleted_at ? account : null;
  };

  // In authorized-fetch mode, what is not the instance actor is served only to signed requests.
  const authorized = async (fed: RequestContext<AppContext>, identifier: string | null) =>
    !app.config.authorizedFetch || identifier === INSTANCE_ACTOR || (await signedRequester(fed)) !== null;

  federation
    .setActorDispatcher('/users/{identifier}', async (fed, identifier) => {
      if (identifier === INSTANCE_ACTOR) return instanceActorOf(fed);
      const account = await signingLocalAccount(fed.data, identifier);
      if (account) return personOf(fed, account);
      // A deleted account is gone for good: Fedify answers 410 for its actor and its WebFinger, as Mastodon does.
      return (await deletedLocalAccount(fed.data, identifier)) ? new Tombstone({ id: fed.getActorUri(identifier) }) : null;
    })
    .authorize((fed, identifier) => authorized(fed, identifier))
    // WebFinger handles are usernames, matched case-insensitively like every other lookup of them; the server's own
    // domain as a username (`acct:example.com@example.com`) names the instance actor, as in Mastodon.
    .mapHandle(async (fed, username) => {
      if (namesInstanceActor(fed.data, username)) return INSTANCE_ACTOR;
      return (await publishedLocalAccount(fed.data, username))?.username ?? (await deletedLocalAccount(fed.data, username))?.username ?? null;
    })
    .setKeyPairsDispatcher(async (fed, identifier) => {
      if (identifier === INSTANCE_ACTOR) return (await fed.data.keyRing.instanceKeyPairs()).pairs;
      const account = await signingLocalAccount(fed.data, identifier);
      return account ? fed.data.keyRing.keyPairs(account.id) : [];
    });

  federation
    .setFollowersDispatcher('/users/{identifier}/followers', async (fed, identifier, cursor) => {
      const account = await publishedLocalAccount(fed.data, identifier);
      if (!account) return null;
      if (cursor === null) return { items: [] }; // the collection itself shows only its count; pages list
      if (account.hide_collections) return { items: [] };
      const page = await followersPage(await fed.data.readDb(null), account.id, { maxId: isId(cursor) ? cursor : undefined, limit: PAGE });
      return {
        items: page.accounts.map((a) => recipientOf(fed.data, a)),
        nextCursor: page.accounts.length === PAGE ? page.lastId : null,
      };
    })
    .setFirstCursor(() => '')
    .setCounter(async (fed, identifier) => (await publishedLocalAccount(fed.data, identifier))?.followers_count ?? null)
    .authorize((fed, identifier) => authorized(fed, identifier));

  federation
    .setFollowingDispatcher('/users/{identifier}/following', async (fed, identifier, cursor) => {
      const account = await publishedLocalAccount(fed.data, identifier);
      if (!account) return null;
      if (cursor === null || account.hide_collections) return { items: [] };
      const page = await followingPage(await fed.data.readDb(null), account.id, { maxId: isId(cursor) ? cursor : undefined, limit: PAGE });
      return {
        items: page.accounts.map((a) => new URL(accountUri(fed.data.render, a))),
        nextCursor: page.accounts.length === PAGE ? page.lastId : null,
      };
    })
    .setFirstCursor(() => '')
    .setCounter(async (fed, identifier) => (await publishedLocalAccount(fed.data, identifier))?.following_count ?? null)
    .authorize((fed, identifier) => authorized(fed, identifier));

  // The outbox: public and unlisted statuses as Create activities (reblogs as Announce), newest first, paged by id.
  federation
    .setOutboxDispatcher('/users/{identifier}/outbox', async (fed, identifier, cursor) => {
      const account = await publishedLocalAccount(fed.data, identifier);
      if (!account) return null;
      if (cursor === null) return { items: [] };
      // Pages of collections may be a moment behind (a replica); actors and Notes are not: other servers fetch
      // them right after a delivery names them, and a replica's 404 would read as "gone".
      const ids = await accountStatusIds(await fed.data.readDb(null), account.id, { visibilities: ['public', 'unlisted'] }, { maxId: isId(cursor) ? cursor : undefined, limit: PAGE_OF_STATUSES });
      const items = [];
      for (const id of ids) {
        const activity = await activityOf(fed, account, id);
        if (activity) items.push(activity);
      }
      return { items, nextCursor: ids.length === PAGE_OF_STATUSES ? ids.at(-1)! : null };
    })
    .setFirstCursor(() => '')
    .setCounter(async (fed, identifier) => (await publishedLocalAccount(fed.data, identifier))?.statuses_count ?? null)
    .authorize((fed, identifier) => authorized(fed, identifier));
  // Featured hashtags, as Mastodon's `featuredTags` collection of Hashtag objects.
  federation
    .setFeaturedTagsDispatcher('/users/{identifier}/collections/tags', async (fed, identifier) => {
      const account = await publishedLocalAccount(fed.data, identifier);
      if (!account) return null;
      const tags = await featuredTagsOf(fed.data.db, account.id);
      return { items: tags.map((t) => new Hashtag({ href: new URL(`/tags/${encodeURIComponent(t.name.toLowerCase())}`, fed.data.config.publicUrl), name: `#${t.name}` })) };
    })
    .authorize((fed, identifier) => authorized(fed, identifier));
  // Pinned statuses, newest pin first, as Notes (federation/featured.ts).
  federation
    .setFeaturedDispatcher('/users/{identifier}/collections/featured', (fed, identifier) => featuredItems(fed, identifier))
    .authorize((fed, identifier) => authorized(fed, identifier));

  // Each status at its uri, as a Note: public and unlisted ones to anyone (to signed requests in authorized-fetch
  // mode), followers-only and direct ones to a signed request from someone who may see them or whose server already
  // holds them (it hosts a follower or a mentioned account). Anyone else gets 404, as if there were nothing.
  federation
    .setObjectDispatcher(Note, '/users/{identifier}/statuses/{id}', async (fed, values) => {
      if (!isId(values.id)) return null;
      const account = await publishedLocalAccount(fed.data, values.identifier);
      const status = account ? await findStatus(fed.data.db, values.id) : null;
      if (!account || !status || status.account_id !== account.id || status.reblog_of_id || status.deleted_at) return null;
      if (!(await mayServeStatus(fed, status))) return null;
      // A status with a poll is a Question (served at the same address: Fedify does not check the class).
      return (await statusObjectOf(fed, account, status)).note as Note;
    })
    .authorize((fed) => authorized(fed, null));

  // Each status's replies, at the `replies` id its Note names (federation/replies.ts).
  setRepliesDispatcher(federation, (fed) => authorized(fed, null));

  // The stamps (FEP-044f QuoteAuthorization) of accepted quotes of our posts, at Mastodon's URL: what other servers
  // fetch to check that a quote of one of our posts was approved. A revoked, pending or rejected quote has none.
  federation
    .setObjectDispatcher(QuoteAuthorization, '/users/{identifier}/quote_authorizations/{id}', async (fed, values) => {
      if (!isId(values.id)) return null;
      const quotedAuthor = await publishedLocalAccount(fed.data, values.identifier);
      const q = quotedAuthor ? await findQuote(fed.data.db, values.id) : null;
      if (!quotedAuthor || !q || q.state !== 'accepted' || q.quoted_account_id !== quotedAuthor.id || !q.quoted_status_id) return null;
      const [quoting, quoted] = await Promise.all([findStatus(fed.data.db, q.status_id), findStatus(fed.data.db, q.quoted_status_id)]);
      const quoter = quoting ? await findAccountById(fed.data.db, quoting.account_id) : null;
      if (!quoting || !quoted || !quoter || quoting.deleted_at || quoted.deleted_at || quoted.account_id !== quotedAuthor.id) return null;
      return quoteAuthorizationOf(fed.data, q, quoting, quoter, quoted, quotedAuthor);
    })
    .authorize((fed) => authorized(fed, null));

  // Remote interaction: a visitor's server is told where to send them to follow or act on something of another
  // server (OStatus's subscribe template and FEP-3b86 intents; federation/interaction-links.ts).
  const interaction = interactionLinks(app.config.publicUrl);
  federation.setWebFingerLinksDispatcher(() => interaction);

  // Each of our custom emoji at its own URL, as Mastodon serves them (what Emoji tags' ids name); a disabled one is gone.
  federation
    .setObjectDispatcher(Emoji, '/emojis/{id}', async (fed, values) => {
      const emoji = isId(values.id) ? await findLocalEmojiById(fed.data.db, values.id) : null;
      return emoji && !emoji.disabled ? emojiObjectOf(fed.data, emoji) : null;
    })
    .authorize((fed) => authorized(fed, null));

  federation.setNodeInfoDispatcher('/nodeinfo/2.1', async (fed) => {
    const [stats, halfYear] = await Promise.all([instanceStats(fed.data.db), activeUsers(fed.data.db, 180)]);
    return {
      software: { name: 'fedi-server', version: fed.data.config.softwareVersion },
      protocols: ['activitypub'],
      openRegistrations: fed.data.config.registrationsMode !== 'none',
      usage: {
        users: { total: stats.userCount, activeMonth: stats.activeMonth, activeHalfyear: halfYear },
        localPosts: stats.statusCount,
        localComments: 0,
      },
      // Not in the NodeInfo schema's fixed part: where the actor that signs this server's own fetches lives.
      metadata: { nodeName: fed.data.config.instanceTitle, instanceActor: fed.getActorUri(INSTANCE_ACTOR).href },
    };
  });

  registerInboxListeners(federation);
  // Other servers' text reaches nothing here that PostgreSQL would refuse (federation/storable-documents.ts).
  storableRemoteInput(federation);
  // Received activities are handled with their JSON as sent at hand, for the terms Fedify drops (received-json.ts).
  const processQueuedTask = federation.processQueuedTask.bind(federation);
  federation.processQueuedTask = (data, message) => withReceivedJson(message, () => processQueuedTask(data, message));
  return federation;
}
