import { randomUUID } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Db } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import type { RedisClient } from '../storage/redis.ts';
import type { KeyTracking } from '../storage/key-tracking.ts';
import { deleteRelay, findRelayByUrl, insertRelay, listRelays, MAX_RELAYS, type RelayRow } from '../storage/relays.ts';
import { queueDelivery, type Delivery } from './deliveries.ts';
import { logAction, type Actor } from './action-log.ts';

/**
 * Relays (FEP-ae0c): the server subscribes, as its instance actor, to a Mastodon-style relay (a Follow of the public
 * collection sent to the relay's inbox) or a LitePub one (a Follow of the relay's actor). Once the relay accepts,
 * our public posts are sent to it, and the public posts it relays to us are our business (federation/relays.ts).
 */

export class RelayInputError extends Error {}

function relaysVersionKey(redisPrefix: string): string {
  return `${redisPrefix}relays:version`;
}

/** Tells every process that the relays changed (the CLI, or the inbox taking an answer). */
export async function publishRelaysChange(redis: RedisClient, redisPrefix: string): Promise<void> {
  await redis.incr(relaysVersionKey(redisPrefix));
}

/** The operator's URL: an absolute http(s) URL without credentials or fragment. */
export function relayUrl(input: string): string {
  if (!URL.canParse(input)) throw new RelayInputError(`not a URL: ${input}`);
  const url = new URL(input);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new RelayInputError('a relay URL is http(s)');
  if (url.username || url.password) throw new RelayInputError('a relay URL carries no credentials');
  url.hash = '';
  return url.href;
}

type Deps = { db: Db; redis: RedisClient; config: Pick<Config, 'publicUrl' | 'redisPrefix'> };

/**
 * Subscribes to a relay: a pending row and, in the same transaction, the delivery that looks at the URL and sends the
 * Follow (an outbox row: a running server's sweeper queues it, and its worker sends it). Adding and removing a relay
 * are in the operators' audit log (`by`: the operator's account, null for the shell's operator).
 */
export async function addRelay(deps: Deps, input: string, by?: Actor): Promise<RelayRow> {
  const url = relayUrl(input);
  const followUri = new URL(`/relays/follows/${randomUUID()}`, deps.config.publicUrl).href;
  const added = await transaction(deps.db, async (tx) => {
    if ((await listRelays(tx)).length >= MAX_RELAYS) throw new RelayInputError(`at most ${MAX_RELAYS} relays`);
    const relay = await insertRelay(tx, url, followUri);
    if (!relay) throw new RelayInputError(`${url} is already a relay here`);
    await queueDelivery(tx, { activity: 'RelayFollow', relayId: relay.id });
    await logAction(tx, by, 'create', { type: 'Relay', id: relay.id, name: relay.url });
    return { relay };
  });
  await publishRelaysChange(deps.redis, deps.config.redisPrefix);
  return added.relay;
}

/** Leaves a relay: its row goes, and an Undo of our Follow is sent (what it needs travels in the delivery). */
export async function removeRelay(deps: Deps, input: string, by?: Actor): Promise<RelayRow> {
  const url = relayUrl(input);
  const removed = await transaction(deps.db, async (tx) => {
    const found = await findRelayByUrl(tx, url);
    const relay = found ? await deleteRelay(tx, found.id) : null;
    if (!relay) throw new RelayInputError(`${url} is not a relay here`);
    // A relay never looked at was never sent a Follow: there is nothing to undo.
    const undo: Delivery | null = relay.inbox_url && relay.kind
      ? { activity: 'UndoRelayFollow', relayKind: relay.kind, inboxUrl: relay.inbox_url, actorUri: relay.actor_uri, followUri: relay.follow_uri }
      : null;
    if (undo) await queueDelivery(tx, undo);
    await logAction(tx, by, 'destroy', { type: 'Relay', id: null, name: relay.url });
    return { relay };
  });
  await publishRelaysChange(deps.redis, deps.config.redisPrefix);
  return removed.relay;
}

/** The accepted relays' hosts and inboxes, as each process keeps them (re-read when the version in Redis moves). */
export interface AcceptedRelays {
  relays: RelayRow[];
  /** The relay a host is (its inbox's or its actor's host). */
  byHost: Map<string, RelayRow>;
  /** The relay an actor is. */
  byActor: Map<string, RelayRow>;
}

class RelayDirectory {
  private cached: Promise<AcceptedRelays> | null = null;
  private version: string | null = null;
  private tracked = false;
  private readonly key: string;
  private readonly db: Db;
  private readonly redis: RedisClient;
  private readonly tracking: KeyTracking | undefined;

  constructor(db: Db, redis: RedisClient, redisPrefix: string, tracking?: KeyTracking) {
    this.db = db;
    this.redis = redis;
    this.tracking = tracking;
    this.key = relaysVersionKey(redisPrefix);
    tracking?.onInvalidate((keys) => {
      if (keys === null || keys.includes(this.key)) this.clear();
    });
  }

  clear(): void {
    this.cached = null;
    this.tracked = false;
  }

  async accepted(): Promise<AcceptedRelays> {
    if (!(this.tracked && this.tracking?.active)) {
      const ticket = this.tracking?.begin();
      try {
        const version = (await (this.tracking?.reader ?? this.redis).get(this.key)) ?? '0';
        if (version !== this.version) {
          this.cached = null;
          this.version = version;
        }
        this.tracked = ticket !== undefined && this.tracking!.unchanged(ticket, [this.key]);
      } finally {
        if (ticket) this.tracking!.end(ticket);
      }
    }
    this.cached ??= listRelays(this.db, 'accepted').then((relays) => {
      const byHost = new Map<string, RelayRow>();
      const byActor = new Map<string, RelayRow>();
      for (const r of relays) {
        for (const u of [r.inbox_url, r.actor_uri]) if (u && URL.canParse(u)) byHost.set(new URL(u).host.toLowerCase(), r);
        if (r.actor_uri) byActor.set(r.actor_uri, r);
      }
      return { relays, byHost, byActor };
    });
    this.cached.catch(() => this.clear());
    return this.cached;
  }
}

const directories = new WeakMap<object, RelayDirectory>();

/** The process's accepted relays for a context (one per context: tests run several servers in one process). */
export function relayDirectory(ctx: { db: Db; redis: RedisClient; config: Pick<Config, 'redisPrefix'>; tracking?: KeyTracking }): RelayDirectory {
  let directory = directories.get(ctx);
  if (!directory) directories.set(ctx, (directory = new RelayDirectory(ctx.db, ctx.redis, ctx.config.redisPrefix, ctx.tracking)));
  return directory;
}
