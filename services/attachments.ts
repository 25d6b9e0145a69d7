import type { Queryable } from '../storage/db.ts';
import { attachmentCandidates, type MediaType } from '../storage/media.ts';
import { unprocessable } from '../errors.ts';

/** Mastodon's words (media_attachments.validations) for a post whose files mix a video or audio file with others. */
export const MIXED_MEDIA = 'Cannot attach a video to a post that already contains images';
export const NOT_PROCESSED = 'Cannot attach files that have not finished processing. Try again in a moment!';

/**
 * Mastodon's rule for a post's files: a video or an audio file goes alone (`@media.size > 1 &&
 * @media.find(&:audio_or_video?)`). A `gifv` (an animated GIF, or a video without sound, as processing finds it) is
 * neither, so it goes with images, as on Mastodon.
 */
export function mixesMedia(types: readonly MediaType[]): boolean {
  return types.length > 1 && types.some((t) => t === 'video' || t === 'audio');
}

export interface AttachableOptions {
  /** Publishing this scheduled post: the files it holds are its own. */
  scheduledId?: string | null;
  /** Editing this status: the files it has (or had) are its own. */
  statusId?: string | null;
  /** Files still being processed pass (the web form waits for them after this check). */
  processingAllowed?: boolean;
}

/**
 * Whether an account may attach these files to a post, an edit or a scheduled post, in the order of Mastodon's
 * PostStatusService and UpdateStatusService (`validate_media!`): each must be the account's and free (not another
 * status's or scheduled post's), then a video or audio file must go alone, then every file must be processed.
 * Refuses with Mastodon's 422 and its words; the API, the pages and scheduled posts all check here.
 */
export async function checkAttachable(db: Queryable, accountId: string, ids: readonly string[], o: AttachableOptions = {}): Promise<void> {
  if (ids.length === 0) return;
  const byId = await attachmentCandidates(db, ids);
  const rows = ids.map((id) => byId.get(id));
  for (const m of rows) {
    if (!m || m.account_id !== accountId) throw unprocessable('Validation failed: media_ids names media that does not exist');
    if (m.status_id !== null && m.status_id !== (o.statusId ?? null)) throw unprocessable('Validation failed: media_ids names media already attached to a status');
    if (m.scheduled_status_id !== null && m.scheduled_status_id !== (o.scheduledId ?? null)) {
      throw unprocessable('Validation failed: media_ids names media already attached to a scheduled status');
    }
    if (m.state === 'failed') throw unprocessable('Validation failed: media_ids names media that could not be processed');
  }
  if (mixesMedia(rows.map((m) => m!.type))) throw unprocessable(MIXED_MEDIA);
  if (!o.processingAllowed && rows.some((m) => m!.state === 'processing')) throw unprocessable(NOT_PROCESSED);
}
