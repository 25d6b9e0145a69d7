import type { AppContext } from '../../context.ts';
import type { StatusBundle } from '../../services/hydrate.ts';
import { flagsOfViewers } from '../../storage/statuses.ts';
import { findNotification } from '../../storage/notifications.ts';
import { renderStatus } from './status.ts';
import { renderNotifications } from './statuses.ts';

/**
 * Streaming payloads (the JSON text Mastodon puts in `payload`), rendered for their receivers. An event reaches
 * every socket of a channel in the same turn; the receivers of one status gathered in that turn are served by one
 * load, one query for their favourites and boosts, and one JSON encoding per distinct view (at most a few), however
 * many sockets there are. Null for a receiver who may not see it.
 */
export class StreamPayloads {
  private readonly ctx: AppContext;
  private pending = new Map<string, Map<string, ((payload: string | null) => void)[]>>();
  private scheduled = false;

  constructor(ctx: AppContext) {
    this.ctx = ctx;
  }

  status(statusId: string, viewerId: string): Promise<string | null> {
    return new Promise((resolve) => {
      let viewers = this.pending.get(statusId);
      if (!viewers) this.pending.set(statusId, (viewers = new Map()));
      const waiting = viewers.get(viewerId);
      if (waiting) waiting.push(resolve);
      else viewers.set(viewerId, [resolve]);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  async notification(notificationId: string, viewerId: string): Promise<string | null> {
    const row = await findNotification(this.ctx.db, viewerId, notificationId);
    if (!row) return null;
    const [rendered] = await renderNotifications(this.ctx, viewerId, [row]);
    return rendered ? JSON.stringify(rendered) : null;
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = new Map();
    this.scheduled = false;
    for (const [statusId, viewers] of batch) {
      void this.renderFor(statusId, [...viewers.keys()]).then(
        (payloads) => { for (const [viewer, resolvers] of viewers) for (const r of resolvers) r(payloads.get(viewer) ?? null); },
        () => { for (const resolvers of viewers.values()) for (const r of resolvers) r(null); },
      );
    }
  }

  private async renderFor(statusId: string, viewerIds: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const open = await this.ctx.statusLoader.load(null, [statusId]);
    const row = open.rows[0];
    if (!row) {
      // Followers-only or direct: seen by few, each checked as a REST read would check them.
      for (const viewerId of viewerIds) {
        const { rows, bundle } = await this.ctx.statusLoader.load(viewerId, [statusId]);
        if (rows[0]) out.set(viewerId, JSON.stringify(renderStatus(this.ctx.render, bundle, rows[0])));
      }
      return out;
    }
    // Public or unlisted: one view per combination of the receiver's flags on the status shown.
    const proper = row.reblog_of_id ?? row.id;
    const author = open.bundle.statuses.get(proper)?.account_id;
    const flags = await flagsOfViewers(this.ctx.db, viewerIds, [proper]);
    const views = new Map<string, string>();
    for (const viewerId of viewerIds) {
      const f = flags.get(viewerId)!;
      const key = `${f.favourited.has(proper)}:${f.reblogged.has(proper)}:${viewerId === row.account_id || viewerId === author}`;
      let json = views.get(key);
      if (json === undefined) {
        const bundle: StatusBundle = { ...open.bundle, favourited: f.favourited, reblogged: f.reblogged, viewerId };
        json = JSON.stringify(renderStatus(this.ctx.render, bundle, row));
        // Whose own post it is shows in the entity (pinned); such views are not shared with others.
        if (!key.endsWith('true')) views.set(key, json);
      }
      out.set(viewerId, json);
    }
    return out;
  }
}
