import type { Db } from '../storage/db.ts';
import * as conversations from '../storage/conversations.ts';
import { findAccountsByIds } from '../storage/accounts.ts';
import { notificationsBlocked } from '../storage/blocks.ts';
import type { StatusRow } from '../storage/statuses.ts';
import { notFound } from '../errors.ts';
import { streamChannels, type StreamEvents } from './stream-events.ts';
import type { StatusDeps } from './statuses.ts';

// Direct conversations (Mastodon's AccountConversation): each direct status joins, for each local participant, the
// conversation with the same set of other participants. Kept by the fan-out job; read and removed by the account's
// actor (actors/account.ts).

/**
 * Files a direct status in its local participants' conversations: the author's stays read, the others' become
 * unread, and each is told on its `direct` stream. A recipient who would not be notified of the author's mention
 * (blocks, muted notifications: Mastodon files the conversation from that notification) gets none. Idempotent.
 */
export async function addDirectStatus(deps: { db: Db; events: StreamEvents }, status: StatusRow): Promise<void> {
  if (status.visibility !== 'direct' || status.reblog_of_id) return;
  const { rows } = await deps.db.query<{ account_id: string }>(`SELECT account_id::text FROM mentions WHERE status_id = $1 LIMIT 100`, [status.id]);
  const participants = [...new Set([status.account_id, ...rows.map((r) => r.account_id)])];
  const local = (await findAccountsByIds(deps.db, participants)).filter((a) => a.domain === null && !a.suspended_at);
  for (const account of local) {
    const author = account.id === status.account_id;
    if (!author && (await notificationsBlocked(deps.db, account.id, status.account_id))) continue;
    const others = participants.filter((id) => id !== account.id);
    const row = await conversations.addStatusToConversation(deps.db, account.id, others, status.id, !author);
    if (row) await deps.events.publish(streamChannels.direct(account.id), { event: 'conversation', conversationId: row.id });
  }
}

/** A deleted status leaves the conversations of these (local) accounts. */
export async function removeDirectStatus(db: Db, accountIds: string[], statusId: string): Promise<void> {
  await conversations.removeStatusFromConversations(db, accountIds, statusId);
}

/** POST /api/v1/conversations/:id/read. */
export async function markRead(deps: StatusDeps, accountId: string, id: string, unread = false): Promise<void> {
  if (!(await conversations.markConversationRead(deps.db, accountId, id, unread))) throw notFound();
}

/** DELETE /api/v1/conversations/:id: gone from the account's list (a new direct status makes it again). */
export async function remove(deps: StatusDeps, accountId: string, id: string): Promise<void> {
  if (!(await conversations.deleteConversation(deps.db, accountId, id))) throw notFound();
}
