import type { Queryable } from '../storage/db.ts';
import * as tagFollows from '../storage/tag-follows.ts';
import { tagDailyUse } from '../storage/trends.ts';
import { notFound, unprocessable } from '../errors.ts';
import type { StatusDeps } from './statuses.ts';

// Followed hashtags (Mastodon's TagFollow), applied by the follower's actor (actors/account.ts). Public posts with a
// followed tag reach the follower's home feed by fan-out (jobs/tag-fanout.ts) and by feed rebuilds.

/** A hashtag's name as posts make them (text/status.ts): letters, digits and underscores, with a letter or underscore. */
const TAG_NAME = /^[\p{L}\p{N}_]*[\p{L}_][\p{L}\p{N}_]*$/u;

export function validTagName(name: string): boolean {
  return name.length <= 100 && TAG_NAME.test(name);
}

export interface FollowedTag extends tagFollows.TagRow {
  following: boolean;
}

export async function followTag(deps: StatusDeps, accountId: string, name: string): Promise<FollowedTag> {
  if (!validTagName(name)) throw unprocessable('Validation failed: Name is invalid');
  const tag = await tagFollows.ensureTag(deps.db, name);
  await tagFollows.insertTagFollow(deps.db, accountId, tag.id);
  // A feed built before the follow gets the tag's posts when it is next rebuilt; new ones come by fan-out.
  return { ...tag, following: true };
}

/** Unfollowing a tag never followed (or never used) answers as Mastodon does: the tag, not followed. */
export async function unfollowTag(deps: StatusDeps, accountId: string, name: string): Promise<FollowedTag> {
  if (!validTagName(name)) throw unprocessable('Validation failed: Name is invalid');
  const tag = await tagFollows.ensureTag(deps.db, name);
  await tagFollows.deleteTagFollow(deps.db, accountId, tag.id);
  return { ...tag, following: false };
}

/** The tag for GET /api/v1/tags/:name: a tag nobody used yet is shown as Mastodon shows it, unsaved (id ""). */
export async function tagForViewer(db: Queryable, viewerId: string | null, name: string): Promise<FollowedTag> {
  if (!validTagName(name)) throw notFound();
  const tag = await tagFollows.findTagByName(db, name);
  if (!tag) return { id: '', name, following: false };
  const following = viewerId ? (await tagFollows.followedAmong(db, viewerId, [tag.id])).has(tag.id) : false;
  return { ...tag, following };
}

export type TagHistory = { day: string; uses: string; accounts: string }[];

/** Seven days of use (today, UTC, first) of each tag, as Mastodon's Tag `history`. */
export async function tagHistories(db: Queryable, tagIds: string[], now = new Date()): Promise<Map<string, TagHistory>> {
  const today = Math.floor(now.getTime() / 86_400_000) * 86_400;
  const days = Array.from({ length: 7 }, (_, i) => today - i * 86_400);
  const ids = tagIds.filter((id) => id !== '');
  const use = await tagDailyUse(db, ids, new Date(days.at(-1)! * 1000));
  const byTagDay = new Map(use.map((u) => [`${u.tagId}/${u.day}`, u]));
  return new Map(tagIds.map((id) => [id, days.map((day) => {
    const u = byTagDay.get(`${id}/${day}`);
    return { day: String(day), uses: String(u?.uses ?? 0), accounts: String(u?.accounts ?? 0) };
  })]));
}
