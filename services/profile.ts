import { unprocessable } from '../errors.ts';
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../context.ts';
import type { AccountRow, ProfileChanges } from '../storage/accounts.ts';
import type { SourceDefaults } from '../storage/users.ts';
import { renderField } from '../text/render.ts';
import { keepVerification } from './profile-links.ts';
import { renderStatusText } from '../text/status.ts';
import { resolveMentions } from './statuses.ts';
import { processProfileImage, type ProfileImageKind } from './images.ts';
import { personChanged } from './session-cache.ts';

export interface ProfileUpdate {
  displayName?: string | undefined;
  note?: string | undefined;
  locked?: boolean | undefined;
  bot?: boolean | undefined;
  discoverable?: boolean | undefined;
  indexable?: boolean | undefined;
  hideCollections?: boolean | undefined;
  avatarDescription?: string | undefined;
  headerDescription?: string | undefined;
  noindex?: boolean | undefined;
  /** Disclose the application posts are sent from (Mastodon's show_application; a web setting). */
  showApplication?: boolean | undefined;
  fields?: { name: string; value: string }[] | undefined;
  avatar?: Buffer | undefined;
  header?: Buffer | undefined;
  source?: SourceDefaults | undefined;
}

/**
 * Applies a profile edit: images are decoded and resized first (a bad file stops everything before any write),
 * stored on the file host, then the account's actor commits the row. New files are removed if the write fails;
 * replaced files are removed once it succeeds.
 */
export async function updateAccountProfile(ctx: AppContext, current: AccountRow, u: ProfileUpdate): Promise<AccountRow> {
  const images: { kind: ProfileImageKind; data: Buffer; contentType: string; key: string }[] = [];
  for (const kind of ['avatar', 'header'] as const) {
    const input = u[kind];
    if (!input) continue;
    if (input.length > ctx.config.maxImageBytes) {
      throw unprocessable(`Validation failed: ${kind} file size must be less than ${Math.floor(ctx.config.maxImageBytes / 1024 / 1024)} MB`);
    }
    const processed = await processProfileImage(kind, input);
    const key = `accounts/${current.id}/${kind}-${randomBytes(8).toString('hex')}.${processed.extension}`;
    images.push({ kind, data: processed.data, contentType: processed.contentType, key });
  }

  const changes: ProfileChanges = {
    displayName: u.displayName,
    locked: u.locked,
    bot: u.bot,
    discoverable: u.discoverable,
    indexable: u.indexable,
    hideCollections: u.hideCollections,
    avatarDescription: u.avatarDescription,
    headerDescription: u.headerDescription,
    noindex: u.noindex,
    showApplication: u.showApplication,
  };
  if (u.note !== undefined) {
    // Multipart bodies carry line breaks as CRLF; store what the person typed, with plain newlines.
    const note = u.note.replace(/\r\n?/g, '\n');
    changes.noteSource = note;
    // Rendered like a status: links, @mentions of known accounts and #hashtags, as Mastodon renders bios.
    const { map } = await resolveMentions(ctx.db, ctx.config, note, current.id);
    changes.noteHtml = renderStatusText(note, { publicUrl: ctx.config.publicUrl, localDomain: ctx.config.localDomain, mentions: map });
  }
  if (u.fields !== undefined) {
    // A link stays verified while its value is the same (services/profile-links.ts); the actor queues the check of new ones.
    changes.fields = keepVerification(current.fields, u.fields.map((f) => ({ name: f.name, value: f.value, value_html: renderField(f.value) })));
  }
  for (const image of images) {
    if (image.kind === 'avatar') {
      changes.avatarFile = image.key;
      changes.avatarContentType = image.contentType;
    } else {
      changes.headerFile = image.key;
      changes.headerContentType = image.contentType;
    }
  }

  const stored: string[] = [];
  try {
    for (const image of images) {
      await ctx.fileHost.put(image.key, image.data, image.contentType);
      stored.push(image.key);
    }
    const { account: updated, previous } = await ctx.actors.ask(current.id, { type: 'updateProfile', profile: changes, source: u.source ?? {} });
    // The files the committed row replaced, not those read before: two edits racing must not leave one orphaned.
    const replaced = images.map((i) => (i.kind === 'avatar' ? previous.avatar_file : previous.header_file)).filter((k): k is string => !!k);
    await Promise.all(replaced.map((k) => ctx.fileHost.delete(k).catch(() => {})));
    await personChanged(ctx, { accountId: current.id });
    return updated;
  } catch (err) {
    await Promise.all(stored.map((k) => ctx.fileHost.delete(k).catch(() => {})));
    throw err;
  }
}

/**
 * Removes the avatar or header (DELETE /api/v1/profile/…): the account falls back to the default image. Through the
 * same actor message as an edit, so caches are told and other servers get the UpdatePerson; the file goes once the
 * row no longer names it.
 */
export async function removeProfileImage(ctx: AppContext, accountId: string, kind: ProfileImageKind): Promise<AccountRow> {
  const profile: ProfileChanges = kind === 'avatar' ? { avatarFile: null, avatarContentType: null } : { headerFile: null, headerContentType: null };
  const { account, previous } = await ctx.actors.ask(accountId, { type: 'updateProfile', profile, source: {} });
  const removed = kind === 'avatar' ? previous.avatar_file : previous.header_file;
  if (removed) await ctx.fileHost.delete(removed).catch(() => {});
  await personChanged(ctx, { accountId });
  return account;
}
