import { start, spawn, query, dispatch, stop, type Ref } from 'nact';
import { handleAccountMessage, type AccountActorDeps, type AccountMessage, type AccountReply } from './account.ts';

interface Envelope {
  msg: AccountMessage;
  sender: Ref<Outcome>;
}
type Outcome = { ok: unknown } | { error: unknown };

export interface ActorRegistryOptions {
  /** An actor with nothing to do for this long is stopped; the next message spawns it again. */
  idleMs: number;
  /** How long a caller waits for an actor's answer. */
  queryTimeoutMs: number;
}

/**
 * One nact actor per account, spawned on its first message and stopped when idle.
 * Callers `ask` an account's actor and get its answer, or the error it raised.
 */
export class ActorRegistry {
  private readonly system = start();
  private readonly actors = new Map<string, Ref<Envelope>>();
  readonly deps: AccountActorDeps;
  private readonly options: ActorRegistryOptions;

  constructor(deps: AccountActorDeps, options: ActorRegistryOptions) {
    this.deps = deps;
    this.options = options;
  }

  get size(): number {
    return this.actors.size;
  }

  private actorFor(accountId: string): Ref<Envelope> {
    const existing = this.actors.get(accountId);
    if (existing) return existing;
    const deps = this.deps;
    const actor = spawn(
      this.system,
      async (state: null, envelope: Envelope) => {
        // Errors go back to the caller; the actor itself stays alive for the next message.
        try {
          dispatch(envelope.sender, { ok: await handleAccountMessage(deps, accountId, envelope.msg) });
        } catch (error) {
          dispatch(envelope.sender, { error });
        }
        return state;
      },
      `account-${accountId}`,
      {
        initialState: null,
        shutdownAfter: this.options.idleMs,
        afterStop: () => {
          if (this.actors.get(accountId) === actor) this.actors.delete(accountId);
        },
        // Anything that escapes the handler restarts the actor rather than leaving it dead.
        onCrash: (_msg, _err, ctx) => ctx.reset,
      },
    );
    this.actors.set(accountId, actor);
    return actor;
  }

  async ask<M extends AccountMessage>(accountId: string, msg: M): Promise<AccountReply<M>> {
    let outcome: Outcome;
    try {
      outcome = await query(this.actorFor(accountId), (sender: Ref<Outcome>) => ({ msg, sender }), this.options.queryTimeoutMs);
    } catch (err) {
      // The actor stopped for idleness between our lookup and the query: spawn it anew, once.
      if (!(err instanceof Error) || !/stopped/.test(err.message)) throw err;
      this.actors.delete(accountId);
      outcome = await query(this.actorFor(accountId), (sender: Ref<Outcome>) => ({ msg, sender }), this.options.queryTimeoutMs);
    }
    if ('error' in outcome) throw outcome.error;
    return outcome.ok as AccountReply<M>;
  }

  /**
   * Puts a status into these accounts' home feeds (their feeds taking statuses, as the caller found), each through
   * its own actor. Fan-out jobs running at once are gathered per turn: an account followed by several authors that
   * post together gets one message with all their statuses (one ZADD), not one message each.
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

  private feedBatch: { statusIds: Map<string, string[]>; waiting: { resolve: () => void; reject: (err: unknown) => void }[] } | null = null;

  private newFeedBatch() {
    const batch = { statusIds: new Map<string, string[]>(), waiting: [] as { resolve: () => void; reject: (err: unknown) => void }[] };
    setImmediate(() => {
      this.feedBatch = null;
      Promise.all([...batch.statusIds].map(([id, statusIds]) => this.ask(id, { type: 'addToHomeFeed', statusIds, accepting: true }))).then(
        () => { for (const w of batch.waiting) w.resolve(); },
        (err: unknown) => { for (const w of batch.waiting) w.reject(err); },
      );
    });
    return batch;
  }

  stop(): void {
    stop(this.system);
    this.actors.clear();
  }
}
