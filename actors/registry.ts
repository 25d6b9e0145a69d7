import { start, spawn, dispatch, stop, type Ref } from 'nact';
import { handleAccountMessage, handlePostStatuses, type AccountActorDeps, type AccountMessage, type AccountReply } from './account.ts';
import type { PostParams } from '../services/statuses.ts';
import type { LiveDeliveries } from '../services/live-deliveries.ts';

/** The longest a feed batch gathers while others are being written. */
const GATHER_MS = 20;
/** The longest a feed batch waits for this process's live stream deliveries under way (services/live-deliveries.ts). */
const LIVE_WAIT_MS = 100;
/**
 * The most posts of one account written in one transaction (services/statuses.ts postStatuses). Each is written in a
 * savepoint of its own, and PostgreSQL keeps up to 64 subtransactions of a backend in shared memory (more overflow it,
 * and every other backend's snapshot then looks them up in pg_subtrans until the commit).
 */
export const POST_BATCH_MAX = 64;

type Outcome = { ok: unknown } | { error: unknown };

interface Message {
  msg: AccountMessage;
  /** Called with the message's outcome: a plain callback, not a temporary actor per answer as nact's query makes. */
  reply: (outcome: Outcome) => void;
}

/**
 * `postStatus` messages of one account gathered while its actor is busy: one envelope in its mailbox, at the place of
 * the first, written in one transaction. It gathers until the actor takes it (`open` false), reaches POST_BATCH_MAX,
 * or another message is sent to the same account (which must not be overtaken by posts sent after it).
 */
interface PostBatch {
  posts: { params: PostParams; reply: (outcome: Outcome) => void }[];
  open: boolean;
}

type Envelope = Message | { batch: PostBatch };

/** A running actor, with what the registry needs to stop it when idle: its messages not answered yet, its last use. */
interface Running {
  ref: Ref<Envelope>;
  pending: number;
  lastUsed: number;
  /** The batch of posts in its mailbox still gathering, if any. */
  gathering: PostBatch | null;
}

export interface ActorRegistryOptions {
  /** An actor with nothing to do for this long is stopped; the next message spawns it again. */
  idleMs: number;
  /** How long a caller waits for an actor's answer. */
  queryTimeoutMs: number;
  /** This process's live stream deliveries, which feed batches let go first (ROLE=all). */
  liveDeliveries?: LiveDeliveries;
}

/**
 * One nact actor per account, spawned on its first message and stopped when idle.
 * Callers `ask` an account's actor and get its answer, or the error it raised.
 *
 * Idle actors are stopped by the registry itself (a sweep every half idle period), never while a message is on its
 * way to them: an actor leaves the map in the same turn it is stopped, so a message is always dispatched to a live
 * actor, and no answer can be lost to an actor that stopped between lookup and dispatch.
 */
export class ActorRegistry {
  private readonly system = start();
  private readonly actors = new Map<string, Running>();
  readonly deps: AccountActorDeps;
  private readonly options: ActorRegistryOptions;
  private readonly sweeper: NodeJS.Timeout;

  constructor(deps: AccountActorDeps, options: ActorRegistryOptions) {
    this.deps = deps;
    this.options = options;
    this.sweeper = setInterval(() => this.stopIdle(), Math.max(10, Math.floor(options.idleMs / 2)));
    this.sweeper.unref();
  }

  get size(): number {
    return this.actors.size;
  }

  /** Messages sent to this account's actor and not answered yet (0 when it has no actor running): for tests. */
  pendingFor(accountId: string): number {
    return this.actors.get(accountId)?.pending ?? 0;
  }

  private actorFor(accountId: string): Running {
    const existing = this.actors.get(accountId);
    if (existing) return existing;
    const deps = this.deps;
    const ref = spawn(
      this.system,
      async (state: null, envelope: Envelope) => {
        if ('batch' in envelope) {
          // What gathered until now is written; posts sent from now on make the next batch.
          const batch = envelope.batch;
          batch.open = false;
          let outcomes: Outcome[];
          try {
            outcomes = await handlePostStatuses(deps, accountId, batch.posts.map((p) => p.params));
          } catch (error) {
            outcomes = batch.posts.map(() => ({ error }));
          }
          batch.posts.forEach((p, i) => p.reply(outcomes[i] ?? { error: new Error('no outcome') }));
          return state;
        }
        // Errors go back to the caller; the actor itself stays alive for the next message.
        let outcome: Outcome;
        try {
          outcome = { ok: await handleAccountMessage(deps, accountId, envelope.msg) };
        } catch (error) {
          outcome = { error };
        }
        envelope.reply(outcome);
        return state;
      },
      `account-${accountId}`,
      {
        initialState: null,
        // Anything that escapes the handler restarts the actor rather than leaving it dead.
        onCrash: (_msg, _err, ctx) => ctx.reset,
      },
    );
    const running: Running = { ref, pending: 0, lastUsed: Date.now(), gathering: null };
    this.actors.set(accountId, running);
    return running;
  }

  /**
   * Hands a message to an account's actor; `reply` gets its outcome. A post joins the account's batch still gathering
   * (posts sent while the actor was busy, written together once it is free: group commit), or starts one; any other
   * message closes the gathering batch, so that what is sent after it is applied after it. On a quiet server a post's
   * batch is taken at once, alone: nothing waits for others to come.
   */
  private send(accountId: string, msg: AccountMessage, reply: (outcome: Outcome) => void): void {
    const actor = this.actorFor(accountId);
    actor.pending += 1;
    const answer = (outcome: Outcome) => {
      actor.pending -= 1;
      actor.lastUsed = Date.now();
      reply(outcome);
    };
    if (msg.type !== 'postStatus') {
      actor.gathering = null;
      dispatch(actor.ref, { msg, reply: answer });
      return;
    }
    let batch = actor.gathering;
    if (!batch?.open || batch.posts.length >= POST_BATCH_MAX) {
      batch = actor.gathering = { posts: [], open: true };
      dispatch(actor.ref, { batch });
    }
    batch.posts.push({ params: msg.params, reply: answer });
  }

  private stopIdle(): void {
    const idleSince = Date.now() - this.options.idleMs;
    for (const [accountId, actor] of this.actors) {
      if (actor.pending > 0 || actor.lastUsed > idleSince) continue;
      this.actors.delete(accountId);
      stop(actor.ref);
    }
  }

  ask<M extends AccountMessage>(accountId: string, msg: M): Promise<AccountReply<M>> {
    return new Promise((resolve, reject) => {
      let answered = false;
      const timer = setTimeout(() => {
        answered = true;
        reject(new Error('Query Timeout'));
      }, this.options.queryTimeoutMs);
      this.send(accountId, msg, (outcome) => {
        if (answered) return;
        clearTimeout(timer);
        if ('error' in outcome) reject(outcome.error);
        else resolve(outcome.ok as AccountReply<M>);
      });
    });
  }

  /**
   * Puts a status into these accounts' home feeds (their feeds taking statuses, as the caller found), each through
   * its own actor. Fan-out jobs running at once are gathered: an account followed by several authors that post
   * together gets one message with all their statuses (one ZADD), not one message each. A batch goes at the end of
   * the turn, unless one before it is still being written: then it gathers until that one is done, so the busier
   * fan-out is, the more each message carries, and a quiet server adds no wait. It gathers for GATHER_MS at most: one
   * follower's actor busy with something slow (a feed rebuild, a remote look-up) must not hold up every fan-out. In a
   * process that also holds streaming sockets, it first waits (LIVE_WAIT_MS at most) for the stream events being
   * written to them.
   */
  addToHomeFeeds(accountIds: string[], statusId: string): Promise<void> {
    if (accountIds.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const batch = (this.feedBatch ??= this.newFeedBatch());
      for (const id of accountIds) {
        let ids = batch.statusIds.get(id);
        if (!ids) batch.statusIds.set(id, (ids = []));
        ids.push(statusId);
      }
      batch.waiting.push({ resolve, reject });
    });
  }

  /** The batch gathering additions, if any. */
  private feedBatch: FeedBatch | null = null;
  /** Batches being written (their actors have not all answered). */
  private feedBatchesWriting = 0;

  private newFeedBatch(): FeedBatch {
    const batch: FeedBatch = { statusIds: new Map(), waiting: [] };
    const write = () => {
      if (this.feedBatchesWriting === 0) return this.writeFeedBatch(batch);
      setTimeout(() => this.writeFeedBatch(batch), GATHER_MS);
    };
    // Sockets first: a post's events being written here to those watching, its feed writes (read only when someone
    // asks) wait until they are, gathering meanwhile.
    const live = this.options.liveDeliveries;
    setImmediate(() => (live?.busy ? void live.idle(LIVE_WAIT_MS).then(write) : write()));
    return batch;
  }

  private writeFeedBatch(batch: FeedBatch): void {
    if (this.feedBatch !== batch) return; // written already
    this.feedBatch = null;
    if (this.stopped) {
      for (const w of batch.waiting) w.reject(new Error('The actor registry has stopped'));
      return;
    }
    this.feedBatchesWriting += 1;
    // One timer for the whole batch rather than one per message.
    let left = batch.statusIds.size;
    let failure: { error: unknown } | null = null;
    const done = (outcome: { error: unknown } | null) => {
      clearTimeout(timer);
      for (const w of batch.waiting) outcome ? w.reject(outcome.error) : w.resolve();
      this.feedBatchesWriting -= 1;
      // What gathered meanwhile goes now.
      if (this.feedBatch) this.writeFeedBatch(this.feedBatch);
    };
    const timer = setTimeout(() => {
      left = -1;
      done({ error: new Error('Query Timeout') });
    }, this.options.queryTimeoutMs);
    for (const [id, statusIds] of batch.statusIds) {
      this.send(id, { type: 'addToHomeFeed', statusIds, accepting: true }, (outcome) => {
        if ('error' in outcome) failure ??= outcome;
        if (--left === 0) done(failure);
      });
    }
  }

  private stopped = false;

  stop(): void {
    this.stopped = true;
    clearInterval(this.sweeper);
    stop(this.system);
    this.actors.clear();
  }
}

interface FeedBatch {
  statusIds: Map<string, string[]>;
  waiting: { resolve: () => void; reject: (err: unknown) => void }[];
}
