import { Accept, Announce, Create, Delete, Follow, PUBLIC_COLLECTION, Undo, Update, isActor, type Recipient, type Reject } from '@fedify/vocab';
import { verifyRequest, type Context, type InboxContext, type KeyCache } from '@fedify/fedify';
import type { CryptographicKey, Multikey } from '@fedify/vocab';
import { validatePublicUrl } from '@fedify/vocab-runtime';
import { pino } from 'pino';
import type { AppContext } from '../context.ts';
import type { Delivery } from '../services/deliveries.ts';
import { domainPolicy } from '../services/domain-policy.ts';
import { publishRelaysChange, relayDirectory } from '../services/relays.ts';
import { findRelay, findRelayByActor, findRelayByFollowUri, setRelayEndpoint, setRelayState, type RelayRow } from '../storage/relays.ts';
import type { AccountRow } from '../storage/accounts.ts';
import type { Visibility } from '../storage/statuses.ts';
import { INSTANCE_ACTOR, signedLoader } from './instance-actor.ts';
import { fetchNote, statusByUri } from './remote-statuses.ts';
import { signerHost } from './domain-policy.ts';
import { dropInbound } from './drops.ts';

/**
 * Relays as FEP-ae0c describes the two kinds there are. Our instance actor follows a Mastodon-style relay by sending
 * a Follow of the public collection to the relay's inbox, and a LitePub one (Pleroma's, activityrelay, AodeRelay) by
 * following the relay's actor, which may follow us back. Once a relay accepts, our public posts (Create, Update,
 * Delete) go to its inbox too, and what it relays to us is the federated timeline's: a Create forwarded as its
 * author signed it (a Linked Data signature, which Fedify verifies) or an Announce of a public Note by the relay actor.
 */

type Fed = InboxContext<AppContext>;

const logs = new Map<string, ReturnType<typeof pino>>();
function relayLog(level: string) {
  let log = logs.get(level);
  if (!log) logs.set(level, (log = pino({ level }).child({ part: 'relays' })));
  return log;
}

/** How long a relayed activity is remembered as such: its inbox job may wait for retries. */
const RELAYED_TTL_S = 2 * 24 * 3600;

const relayedKey = (app: AppContext, activityId: string) => `${app.config.redisPrefix}relayed:${activityId}`;

function hostOf(id: string | null | undefined): string | null {
  return id && URL.canParse(id) ? new URL(id).host.toLowerCase() : null;
}

function idOf(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { id?: unknown }).id === 'string') return (value as { id: string }).id;
  return null;
}

// --- inbound, at the HTTP request (federation/mount.ts), before Fedify queues the activity ---

/**
 * What an inbox POST signed by an accepted relay's key may do: each relay brings at most RELAY_INTAKE_PER_MINUTE
 * activities a minute (a relay that floods is answered 429, which relays retry later, and logged once a minute), and
 * an activity it forwards for someone else is remembered as relayed, so the inbox knows why it came. The relay's
 * HTTP signature is checked here: Fedify skips it for an activity whose own Linked Data signature verifies, and a
 * stranger naming the relay's key must not pass for the relay.
 */
export async function relayIntake(app: AppContext, headers: Record<string, string | string[] | undefined>, activity: Record<string, unknown> | null, request: () => Request): Promise<'taken' | 'over' | 'forged'> {
  const host = signerHost(headers)?.toLowerCase();
  if (!host || activity === null) return 'taken';
  const relay = (await relayDirectory(app).accepted()).byHost.get(host);
  if (!relay) return 'taken';
  const fed = app.federation.createContext(new URL(app.config.publicUrl), app);
  const key = await verifyRequest(request(), { documentLoader: await signedLoader(fed), contextLoader: fed.contextLoader, keyCache: relayKeys }).catch(() => null);
  if (!key || hostOf(key.id?.href) !== host) return 'forged';
  const minute = Math.floor(Date.now() / 60_000);
  const counter = `${app.config.redisPrefix}relay-intake:${relay.id}:${minute}`;
  const [[, count]] = (await app.redis.multi().incr(counter).expire(counter, 120).exec()) as [[unknown, number], unknown];
  if (count > app.config.relayIntakePerMinute) {
    if (count === app.config.relayIntakePerMinute + 1) {
      relayLog(app.config.logLevel).warn({ relay: relay.url, perMinute: app.config.relayIntakePerMinute }, 'relay over its intake: its activities are refused (429) for the rest of this minute');
    }
    return 'over';
  }
  const id = idOf(activity.id);
  if (id && hostOf(idOf(activity.actor)) !== host) await app.redis.set(relayedKey(app, id), relay.id, 'EX', RELAYED_TTL_S);
  return 'taken';
}

/** Relays' keys, kept by this process (a handful; a failed fetch is not kept, so it is tried again). */
const keysSeen = new Map<string, CryptographicKey | Multikey>();
const relayKeys: KeyCache = {
  get: async (id) => keysSeen.get(id.href),
  set: async (id, key) => {
    if (!key) return;
    if (keysSeen.size >= 200) keysSeen.delete(keysSeen.keys().next().value!);
    keysSeen.set(id.href, key);
  },
};

// --- inbox listeners' hooks (federation/inbox.ts) ---

/** Whether this activity came forwarded by an accepted relay (relayIntake saw it signed by the relay's key). */
export async function arrivedThroughRelay(fed: Fed, activityId: URL | null): Promise<boolean> {
  if (!activityId) return false;
  const relayId = await fed.data.redis.get(relayedKey(fed.data, activityId.href));
  return relayId !== null && (await relayDirectory(fed.data).accepted()).relays.some((r) => r.id === relayId);
}

/**
 * An Accept or Reject of our relay Follow (by id, embedded or not), from the relay: the relay becomes accepted or
 * rejected. True when the answer was about a relay (taken or not), so that it is not read as any other answer.
 */
export async function onRelayAnswer(fed: Fed, answer: Accept | Reject, accepted: boolean): Promise<boolean> {
  const id = answer.objectId;
  const relay = id ? await findRelayByFollowUri(fed.data.db, id.href) : null;
  if (!relay) return false;
  const actor = answer.actorId?.href ?? null;
  // A LitePub relay is its actor; a Mastodon-style relay's actor is whoever answers from the host of its inbox.
  const fromRelay = relay.actor_uri ? actor === relay.actor_uri : hostOf(actor) !== null && hostOf(actor) === hostOf(relay.inbox_url);
  if (!fromRelay) {
    dropInbound(fed.data, answer, 'refused', `it answers the relay Follow of ${relay.url} but comes from ${actor}`);
    return true;
  }
  await setRelayState(fed.data.db, relay.id, accepted ? 'accepted' : 'rejected', actor);
  await publishRelaysChange(fed.data.redis, fed.data.config.redisPrefix);
  relayDirectory(fed.data).clear();
  relayLog(fed.data.config.logLevel).info({ relay: relay.url, actor }, accepted ? 'relay accepted our subscription' : 'relay rejected our subscription');
  return true;
}

/** A LitePub relay follows our instance actor back: accepted, from the instance actor. True when it was that. */
export async function onRelayFollow(fed: Fed, follow: Follow): Promise<boolean> {
  if (follow.objectId?.href !== fed.getActorUri(INSTANCE_ACTOR).href || !follow.actorId) return false;
  const relay = await relayOfActor(fed.data, follow.actorId.href);
  if (!relay?.inbox_url || relay.state === 'rejected') return false;
  const me = fed.getActorUri(INSTANCE_ACTOR);
  const accept = new Accept({ id: new URL(`${me.href}#accepts/relays/${relay.id}/${Date.now()}`), actor: me, object: follow, tos: [follow.actorId] });
  await fed.sendActivity({ identifier: INSTANCE_ACTOR }, { id: follow.actorId, inboxId: new URL(relay.inbox_url) }, accept);
  return true;
}

/**
 * An Announce by an accepted relay's actor: the Note it names is brought in (fetched from its author's server, so
 * nothing the relay says about it is taken on trust) and kept as a post of its author, not as the relay's boost,
 * as Mastodon does with relayed Announces. True when the Announce was a relay's.
 */
export async function onRelayAnnounce(fed: Fed, announce: Announce): Promise<boolean> {
  const actor = announce.actorId?.href;
  if (!actor || !(await relayDirectory(fed.data).accepted()).byActor.has(actor)) return false;
  const status = (await statusByUri(fed, announce.objectId)) ?? (await fetchNote(fed, announce.objectId));
  if (!status) dropInbound(fed.data, announce, 'object_unavailable', `the relayed post ${announce.objectId?.href ?? '(none)'} could not be had`);
  return true;
}

async function relayOfActor(app: AppContext, actorUri: string): Promise<RelayRow | null> {
  const accepted = (await relayDirectory(app).accepted()).byActor.get(actorUri);
  if (accepted) return accepted;
  return findRelayByActor(app.db, actorUri);
}

// --- outbound (federation/outbound.ts) ---

/** The instance actor's Follow of a relay (looking at its URL first), or the Undo of it. */
export async function deliverRelayActivity(app: AppContext, d: Extract<Delivery, { activity: 'RelayFollow' | 'UndoRelayFollow' }>): Promise<void> {
  const fed = app.federation.createContext(new URL(app.config.publicUrl), app);
  const me = fed.getActorUri(INSTANCE_ACTOR);
  if (d.activity === 'UndoRelayFollow') {
    // `relayKind`, not `kind`: a job's `kind` is its outbox row's (jobs/queues.ts), which would hide it.
    const follow = relayFollow(me, d.relayKind, d.followUri, d.actorUri);
    const undo = new Undo({ id: new URL(`${d.followUri}#undo`), actor: me, object: follow, ...(d.actorUri ? { tos: [new URL(d.actorUri)] } : {}) });
    if (await mayDeliver(app, d.inboxUrl)) await fed.sendActivity({ identifier: INSTANCE_ACTOR }, relayRecipient(d.inboxUrl, d.actorUri), undo);
    return;
  }
  let relay = await findRelay(app.db, d.relayId);
  if (!relay || relay.state !== 'pending') return; // removed, or answered already
  if (!relay.kind || !relay.inbox_url) {
    const endpoint = await relayEndpoint(fed, relay.url);
    await setRelayEndpoint(app.db, relay.id, endpoint.kind, endpoint.inboxUrl, endpoint.actorUri);
    await publishRelaysChange(app.redis, app.config.redisPrefix);
    relay = { ...relay, kind: endpoint.kind, inbox_url: endpoint.inboxUrl, actor_uri: endpoint.actorUri };
  }
  if (!(await mayDeliver(app, relay.inbox_url!))) {
    relayLog(app.config.logLevel).warn({ relay: relay.url }, 'relay inbox refused: not a public http(s) address, or its server is suspended');
    return;
  }
  const follow = relayFollow(me, relay.kind!, relay.follow_uri, relay.actor_uri);
  await fed.sendActivity({ identifier: INSTANCE_ACTOR }, relayRecipient(relay.inbox_url!, relay.actor_uri), follow);
}

/**
 * What the operator's URL is: an actor document there (fetched signed by the instance actor) makes it a LitePub
 * relay, followed as that actor at its inbox; anything else (a Mastodon-style relay's inbox answers GET with 404 or
 * 405) is a Mastodon-style relay's inbox.
 */
async function relayEndpoint(fed: Context<AppContext>, url: string): Promise<{ kind: 'mastodon' | 'litepub'; inboxUrl: string; actorUri: string | null }> {
  const object = await fed.lookupObject(url, { documentLoader: await signedLoader(fed) }).catch(() => null);
  if (object && isActor(object) && object.id && object.inboxId) return { kind: 'litepub', inboxUrl: object.inboxId.href, actorUri: object.id.href };
  return { kind: 'mastodon', inboxUrl: url, actorUri: null };
}

/** Mastodon's relay Follow has the public collection as its object; LitePub's follows the relay's actor. */
function relayFollow(me: URL, kind: 'mastodon' | 'litepub', followUri: string, actorUri: string | null): Follow {
  return kind === 'litepub' && actorUri
    ? new Follow({ id: new URL(followUri), actor: me, object: new URL(actorUri), tos: [new URL(actorUri)] })
    : new Follow({ id: new URL(followUri), actor: me, object: PUBLIC_COLLECTION });
}

/** A Mastodon-style relay's actor is not known before it answers: its inbox stands for it (Fedify needs an id). */
function relayRecipient(inboxUrl: string, actorUri: string | null): Recipient {
  return { id: new URL(actorUri ?? inboxUrl), inboxId: new URL(inboxUrl) };
}

async function mayDeliver(app: AppContext, inboxUrl: string): Promise<boolean> {
  if (!/^https?:\/\//i.test(inboxUrl) || (await domainPolicy(app).refuses(inboxUrl))) return false;
  return app.config.allowPrivateAddresses || (await validatePublicUrl(inboxUrl).then(() => true, () => false));
}

/**
 * A public post's Create, Update or Delete goes to every accepted relay's inbox too (FEP-ae0c: relays take the
 * activities of public posts; unlisted, followers-only and direct ones never go). Signed by the author, with the
 * Linked Data signature Fedify adds, which is what lets the relay's subscribers trust a forwarded copy.
 */
export async function sendToRelays(app: AppContext, fed: Context<AppContext>, author: AccountRow, status: { visibility: Visibility }, activity: Create | Update | Delete, orderingKey: string): Promise<void> {
  if (status.visibility !== 'public') return;
  const { relays } = await relayDirectory(app).accepted();
  const recipients: Recipient[] = [];
  for (const r of relays) if (r.inbox_url && (await mayDeliver(app, r.inbox_url))) recipients.push(relayRecipient(r.inbox_url, r.actor_uri));
  if (recipients.length > 0) await fed.sendActivity({ identifier: author.username }, recipients, activity, { orderingKey });
}
