import type { Db } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import { FEATURED_TAGS_LIMIT, featureTag, unfeatureTagNamed } from '../storage/featured-tags.ts';
import { unprocessable } from '../errors.ts';

/** A hashtag as Mastodon takes one: letters, digits, underscores (and a middle dot), not only digits. */
const TAG = /^[\p{L}\p{N}_\u00b7\u200c]{1,100}$/u;

/**
 * Features a hashtag on the account's profile (POST /api/v1/featured_tags, and Mastodon 4.4's
 * POST /api/v1/tags/:name/feature): one rule for both. Returns the featured tag's id.
 */
export async function featureHashtag(db: Db, accountId: string, rawName: string): Promise<string> {
  const name = rawName.trim().replace(/^#/, '');
  if (!name) throw unprocessable("Validation failed: Name can't be blank");
  if (!TAG.test(name) || /^\d+$/.test(name)) throw unprocessable('Validation failed: Name is invalid');
  const id = await transaction(db, (tx) => featureTag(tx, accountId, name));
  if (!id) throw unprocessable(`Validation failed: You cannot feature more than ${FEATURED_TAGS_LIMIT} hashtags`);
  return id;
}

/** Stops featuring a hashtag, by name (no change if it was not featured). */
export async function unfeatureHashtag(db: Db, accountId: string, rawName: string): Promise<void> {
  await unfeatureTagNamed(db, accountId, rawName.trim().replace(/^#/, ''));
}
