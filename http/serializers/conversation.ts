import type { AppContext } from '../../context.ts';
import type { ConversationRow } from '../../storage/conversations.ts';
import { findAccountsByIds } from '../../storage/accounts.ts';
import { renderAccount } from './account.ts';
import { renderStatus } from './status.ts';
import { loadForViewer } from './statuses.ts';

/**
 * Mastodon's Conversation entities for their owner: the other participants (oneself for notes to oneself) and the
 * last status as the viewer may see it (null when they may not, e.g. its author is blocked).
 */
export async function renderConversations(ctx: AppContext, viewerId: string, rows: ConversationRow[]) {
  const participants = (r: ConversationRow) => (r.participant_account_ids.length > 0 ? r.participant_account_ids : [viewerId]);
  const accounts = new Map((await findAccountsByIds(ctx.db, [...new Set(rows.flatMap(participants))])).map((a) => [a.id, a]));
  const { rows: statuses, bundle } = await loadForViewer(ctx, viewerId, rows.map((r) => r.last_status_id), 'thread');
  const visible = new Map(statuses.map((s) => [s.id, s]));
  return rows.map((r) => {
    const last = visible.get(r.last_status_id);
    return {
      id: r.id,
      unread: r.unread,
      // A deleted participant is left out as it is read (the stored sets are not rewritten: a set losing a member
      // could collide with another conversation's under the (account_id, participant_account_ids) key).
      accounts: participants(r).map((id) => accounts.get(id)).filter((a) => !!a && !a.deleted_at).map((a) => renderAccount(ctx.render, a!)),
      last_status: last ? renderStatus(ctx.render, bundle, last) : null,
    };
  });
}

/** One conversation as a streaming payload (JSON text), or null when it is no longer there. */
export async function conversationPayload(ctx: AppContext, viewerId: string, row: ConversationRow | null): Promise<string | null> {
  if (!row) return null;
  const [rendered] = await renderConversations(ctx, viewerId, [row]);
  return rendered ? JSON.stringify(rendered) : null;
}
