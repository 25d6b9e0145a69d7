// Copying another server's emoji into this server's own set (Mastodon's "Copy" in its custom emoji admin): the image
// is had through the remote media copy (fetched and checked as any remote emoji) and then added as an upload is.
import type { Config } from '../config.ts';
import type { RedisClient } from '../storage/redis.ts';
import type { EmojiRow } from '../storage/custom-emojis.ts';
import { findRemoteEmoji } from '../storage/custom-emojis.ts';
import { addLocalEmoji, EmojiRefused, type AddOutcome, type EmojiDeps } from './custom-emojis.ts';
import { copyEmoji } from './remote-media.ts';
import type { Actor } from './action-log.ts';

export type EmojiCopyDeps = EmojiDeps & { config: Config; redis: RedisClient };

/**
 * Adds the remote emoji `remoteId` to this server's emoji as `as.shortcode` (by default its own shortcode). Refused
 * (EmojiRefused) when its image cannot be had; 'exists' when the shortcode is taken here and `overwrite` is off.
 * The operators' audit log has it as 'copy' (`by`: the operator's account, null for the shell's operator).
 */
export async function copyRemoteEmoji(
  deps: EmojiCopyDeps, remote: EmojiRow,
  as: { shortcode?: string; category: string | null; visibleInPicker: boolean; overwrite: boolean }, by?: Actor,
): Promise<{ outcome: AddOutcome; row: EmojiRow | null }> {
  if (remote.domain === null) throw new EmojiRefused(`:${remote.shortcode}: is already this server's`);
  const outcome = await copyEmoji(deps, remote.id);
  const copied = await findRemoteEmoji(deps.db, remote.id);
  const image = copied?.image_key ? await deps.fileHost.get(copied.image_key) : null;
  if (!image) throw new EmojiRefused(`the image of :${remote.shortcode}@${remote.domain}: could not be had (${outcome})`);
  return addLocalEmoji(deps, { shortcode: as.shortcode ?? remote.shortcode, image, category: as.category, visibleInPicker: as.visibleInPicker, overwrite: as.overwrite }, by, 'copy');
}
