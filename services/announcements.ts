import type { Db, Queryable } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import { addToOutbox, type OutboxRow } from '../storage/outbox.ts';
import * as store from '../storage/announcements.ts';
import { findLocalEmoji } from '../storage/custom-emojis.ts';
import { notFound, ValidationFailed } from '../errors.ts';
import { streamChannels, type StreamEvents } from './stream-events.ts';
import { logAction, type ActionName, type Actor } from './action-log.ts';

/**
 * Operators' announcements as Mastodon has them: written by an operator whose role may manage announcements (the
 * CLI and the operators' page check it: services/roles.ts), published at once or at `scheduled_at` by a delayed job,
 * read, dismissed and reacted to by everyone signed in. Those with a streaming connection hear of each change on
 * their user stream (`announcement`, `announcement.reaction`, `announcement.delete`).
 */
export interface AnnouncementDeps {
  db: Db;
  /** Live events; the CLI has them too (a Redis connection), so that open clients hear of its changes. */
  events: Pick<StreamEvents, 'publish'> | null;
  /** Queues the delayed publication; without it, the outbox row waits for a running server's sweeper. */
  jobs: { enqueue(row: OutboxRow): Promise<void> } | null;
}

export const ANNOUNCEMENT_TEXT_MAX = 5000;
/** Mastodon's AnnouncementReaction limit: at most this many different reactions per person and announcement. */
export const REACTIONS_PER_PERSON = 8;

export interface AnnouncementInput {
  text: string;
  startsAt?: Date | null;
  endsAt?: Date | null;
  allDay?: boolean;
  scheduledAt?: Date | null;
}

export async function createAnnouncement(deps: AnnouncementDeps, input: AnnouncementInput, by?: Actor): Promise<store.AnnouncementRow> {
  const text = input.text.trim();
  const errors: Record<string, string> = {};
  if (text === '') errors.text = "can't be blank";
  else if (text.length > ANNOUNCEMENT_TEXT_MAX) errors.text = `is too long (maximum is ${ANNOUNCEMENT_TEXT_MAX} characters)`;
  if (input.startsAt && input.endsAt && input.endsAt <= input.startsAt) errors.ends_at = 'must be after the start';
  if ((input.startsAt === null || input.startsAt === undefined) !== (input.endsAt === null || input.endsAt === undefined) && input.allDay) {
    errors.all_day = 'needs both a start and an end';
  }
  if (input.scheduledAt && input.scheduledAt.getTime() <= Date.now()) errors.scheduled_at = 'must be in the future';
  if (Object.keys(errors).length > 0) throw validation(errors);
  const scheduledAt = input.scheduledAt ?? null;
  const { row, outbox } = await transaction(deps.db, async (tx) => {
    const row = await store.insertAnnouncement(tx, {
      text, allDay: input.allDay ?? false, startsAt: input.startsAt ?? null, endsAt: input.endsAt ?? null, scheduledAt, published: scheduledAt === null,
    });
    await logAction(tx, by, 'create', announcementTarget(row));
    const outbox = scheduledAt
      ? await addToOutbox(tx, 'publishAnnouncement', { announcementId: row.id, scheduledAt: scheduledAt.toISOString(), runAt: scheduledAt.toISOString() })
      : null;
    return { row, outbox };
  });
  if (outbox && deps.jobs) await deps.jobs.enqueue(outbox).catch(() => {});
  if (row.published) await announce(deps, row.id);
  return row;
}

/** Publishes now (or, from the delayed job, only if it is still scheduled for then); false when nothing changed. */
export async function publishAnnouncement(deps: AnnouncementDeps, id: string, scheduledFor?: Date, by?: Actor): Promise<boolean> {
  const row = await logged(deps.db, by, 'publish', (tx) => store.setPublished(tx, id, true, scheduledFor));
  if (row) await announce(deps, id);
  return row !== null;
}

export async function unpublishAnnouncement(deps: AnnouncementDeps, id: string, by?: Actor): Promise<boolean> {
  const row = await logged(deps.db, by, 'unpublish', (tx) => store.setPublished(tx, id, false));
  if (row) await deps.events?.publish(streamChannels.announcements, { event: 'announcement.delete', announcementId: id });
  return row !== null;
}

export async function removeAnnouncement(deps: AnnouncementDeps, id: string, by?: Actor): Promise<boolean> {
  const row = await logged(deps.db, by, 'destroy', (tx) => store.deleteAnnouncement(tx, id));
  if (row?.published) await deps.events?.publish(streamChannels.announcements, { event: 'announcement.delete', announcementId: id });
  return row !== null;
}

/** An announcement as the audit log names it: by the start of its text. */
const announcementTarget = (row: store.AnnouncementRow) => ({ type: 'Announcement' as const, id: row.id, name: row.text.slice(0, 80) });

async function logged(db: Db, by: Actor | undefined, action: ActionName, write: (tx: Queryable) => Promise<store.AnnouncementRow | null>): Promise<store.AnnouncementRow | null> {
  return transaction(db, async (tx) => {
    const row = await write(tx);
    if (row) await logAction(tx, by, action, { ...announcementTarget(row), id: action === 'destroy' ? null : row.id });
    return row;
  });
}

async function announce(deps: AnnouncementDeps, id: string): Promise<void> {
  await deps.events?.publish(streamChannels.announcements, { event: 'announcement', announcementId: id });
}

/** A published announcement, or 404 (Mastodon's answer for one that is not, or no longer, published). */
async function published(db: Db, id: string): Promise<store.AnnouncementRow> {
  const row = /^\d{1,20}$/.test(id) ? await store.findAnnouncement(db, id) : null;
  if (!row || !row.published) throw notFound();
  return row;
}

export async function dismiss(deps: AnnouncementDeps, viewerId: string, id: string): Promise<void> {
  await published(deps.db, id);
  await store.dismissAnnouncement(deps.db, viewerId, id);
}

// A single emoji as Unicode defines them (RGI: what fonts draw as one picture), as Mastodon accepts for a reaction.
const UNICODE_EMOJI = /^\p{RGI_Emoji}$/v;

/**
 * Adds a reaction: a Unicode emoji, or the shortcode of one of this server's enabled custom emoji (422 otherwise,
 * and past REACTIONS_PER_PERSON). Adding one twice is no error.
 */
export async function react(deps: AnnouncementDeps, viewerId: string, id: string, name: string): Promise<void> {
  await published(deps.db, id);
  const custom = /^[a-zA-Z0-9_]{2,}$/.test(name) ? await findLocalEmoji(deps.db, name) : null;
  if (!(custom && !custom.disabled) && !UNICODE_EMOJI.test(name)) throw validation({ name: 'is not a recognized emoji' });
  const added = await transaction(deps.db, async (tx) => {
    // Counted under a lock on the announcement's row: two reactions at once cannot both pass the limit.
    await tx.query('SELECT 1 FROM announcements WHERE id = $1 FOR UPDATE', [id]);
    if ((await store.countOwnReactions(tx, viewerId, id)) >= REACTIONS_PER_PERSON) throw validation({ name: 'has reached the limit of reactions' });
    return store.addReaction(tx, { accountId: viewerId, announcementId: id, name, customEmojiId: custom?.id ?? null });
  });
  if (added) await reactionChanged(deps, id, name);
}

/** Takes a reaction back; taking back one that is not there is no error (as Mastodon). */
export async function unreact(deps: AnnouncementDeps, viewerId: string, id: string, name: string): Promise<void> {
  await published(deps.db, id);
  if (await store.removeReaction(deps.db, viewerId, id, name)) await reactionChanged(deps, id, name);
}

/** Everyone hears the new count (Mastodon's `announcement.reaction`: name, count and the announcement's id). */
async function reactionChanged(deps: AnnouncementDeps, id: string, name: string): Promise<void> {
  const count = (await store.reactionCounts(deps.db, [id], null)).find((r) => r.name === name)?.count ?? 0;
  await deps.events?.publish(streamChannels.announcements, { event: 'announcement.reaction', reaction: { name, count, announcement_id: id } });
}

function validation(errors: Record<string, string>): ValidationFailed {
  return new ValidationFailed(Object.fromEntries(Object.entries(errors).map(([k, v]) => [k, [{ error: 'ERR_INVALID', description: v }]])));
}
