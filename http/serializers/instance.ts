import type { Config } from '../../config.ts';
import { POLL_LIMITS } from '../../services/polls.ts';
import type { InstanceStats } from '../../storage/instance.ts';
import type { RenderContext } from './context.ts';
import { renderAccount } from './account.ts';
import type { AccountRow } from '../../storage/accounts.ts';
import { ALL_SCOPES } from '../oauth/scopes.ts';
import type { RuleRow } from '../../storage/rules.ts';
import { ORIGINAL_PIXELS, SUPPORTED_MIME_TYPES } from '../../services/media.ts';
import { thumbnailUrl, type InstanceThumbnail } from '../../services/instance-thumbnail.ts';
import { operatorHtml } from '../../services/instance.ts';
import pkg from '../../package.json' with { type: 'json' };

/** Mastodon apps read the version to decide which features exist; we speak the 4.3 API. */
export const VERSION = `4.3.0 (compatible; ${pkg.name} ${pkg.version})`;
/**
 * The limits this server enforces (test/http/instance-extras.test.ts checks each at its limit and one past it):
 * - accounts: display name, bio and fields as PATCH /api/v1/accounts/update_credentials takes them. Featured tags
 *   and pinned statuses do not exist yet; Mastodon's figures are shown, as the entity requires them.
 * - statuses: MAX_STATUS_CHARS with every URL counted as 23 characters (services/statuses.ts), four attachments.
 * - media: what POST /api/v2/media takes, by content (services/media.ts); images of any size up to 16384×16384 are
 *   taken and scaled down to 3840×2160 worth of pixels, which is the matrix limit shown (Mastodon's too), so that
 *   clients scale down before sending. Video is stored as sent: its matrix and frame-rate limits are Mastodon's,
 *   shown as advice and not checked.
 * - polls: the limits posting enforces (services/polls.ts POLL_LIMITS, Mastodon's).
 */
function limits(config: Config) {
  return {
    accounts: {
      max_featured_tags: 10,
      max_pinned_statuses: 5,
      max_display_name_length: 30,
      max_note_length: 500,
      max_profile_fields: 4,
      profile_field_name_limit: 255,
      profile_field_value_limit: 255,
    },
    statuses: { max_characters: config.maxStatusChars, max_media_attachments: 4, characters_reserved_per_url: 23 },
    media_attachments: {
      supported_mime_types: SUPPORTED_MIME_TYPES,
      image_size_limit: config.maxImageBytes,
      image_matrix_limit: ORIGINAL_PIXELS,
      video_size_limit: config.maxVideoBytes,
      video_frame_rate_limit: 120,
      video_matrix_limit: 3840 * 2160,
      description_limit: 1500,
    },
    polls: {
      max_options: POLL_LIMITS.maxOptions,
      max_characters_per_option: POLL_LIMITS.maxCharactersPerOption,
      min_expiration: POLL_LIMITS.minExpiration,
      max_expiration: POLL_LIMITS.maxExpiration,
    },
  };
}

/** What the instance entities show besides settings and counts. */
export interface InstanceExtras {
  rules: RuleRow[];
  thumbnail: InstanceThumbnail;
}

/** Mastodon's Rule entity. */
export function renderRule(r: RuleRow) {
  return { id: r.id, text: r.text, hint: r.hint };
}

const streamingUrl = (publicUrl: string) => publicUrl.replace(/^http/, 'ws');

// Mastodon sends '' when these are unset, which its own schema refuses (a required email and a URI, not nullable).
// These placeholders are valid and name nothing: `.invalid` never resolves (RFC 6761), so no one gets the mail,
// and about:blank is the empty document, since no public repository of this server is known.
const NO_CONTACT_EMAIL = 'contact-not-set@example.invalid';
const NO_SOURCE_URL = 'about:blank';
const contactEmail = (config: Config) => config.contactEmail || NO_CONTACT_EMAIL;

export function renderInstanceV1(ctx: RenderContext, config: Config, stats: InstanceStats, contact: AccountRow | null, extras: InstanceExtras) {
  return {
    uri: config.localDomain,
    title: config.instanceTitle,
    short_description: config.instanceDescription,
    description: config.instanceDescription,
    email: contactEmail(config),
    version: VERSION,
    urls: { streaming_api: streamingUrl(config.publicUrl) },
    stats: { user_count: stats.userCount, status_count: stats.statusCount, domain_count: stats.domainCount },
    thumbnail: thumbnailUrl(config, extras.thumbnail, '@1x'),
    languages: config.instanceLanguages,
    registrations: config.registrationsMode !== 'none',
    approval_required: config.registrationsMode === 'approved',
    invites_enabled: false,
    configuration: limits(config),
    contact_account: contact ? renderAccount(ctx, contact) : null,
    rules: extras.rules.map(renderRule),
  };
}

export function renderInstanceV2(ctx: RenderContext, config: Config, stats: InstanceStats, contact: AccountRow | null, vapidPublicKey: string, extras: InstanceExtras) {
  const closed = config.registrationsMode === 'none';
  return {
    domain: config.localDomain,
    title: config.instanceTitle,
    version: VERSION,
    source_url: config.sourceUrl || NO_SOURCE_URL,
    description: config.instanceDescription,
    usage: { users: { active_month: stats.activeMonth } },
    thumbnail: {
      url: thumbnailUrl(config, extras.thumbnail, '@1x'),
      blurhash: extras.thumbnail.blurhash,
      description: config.instanceThumbnailDescription || null,
      versions: { '@1x': thumbnailUrl(config, extras.thumbnail, '@1x'), '@2x': thumbnailUrl(config, extras.thumbnail, '@2x') },
    },
    icon: [],
    languages: config.instanceLanguages,
    configuration: {
      urls: { streaming: streamingUrl(config.publicUrl), status: config.statusPageUrl || null },
      vapid: { public_key: vapidPublicKey },
      translation: { enabled: config.translation !== null },
      timelines_access: {
        live_feeds: { local: 'public', remote: 'public' },
        hashtag_feeds: { local: 'public', remote: 'public' },
        trending_link_feeds: { local: 'public', remote: 'public' },
      },
      ...limits(config),
    },
    registrations: {
      enabled: !closed,
      approval_required: config.registrationsMode === 'approved',
      reason_required: config.registrationsMode === 'approved',
      // As Mastodon: the operator's message to would-be members, only while registrations are closed.
      message: closed && config.registrationsClosedMessage ? operatorHtml(config.registrationsClosedMessage) : null,
      url: null,
      min_age: null,
    },
    api_versions: { mastodon: 2 },
    contact: { email: contactEmail(config), account: contact ? renderAccount(ctx, contact) : null },
    rules: extras.rules.map(renderRule),
    oauth_scopes: ALL_SCOPES,
  };
}

/** Mastodon's ExtendedDescription entity. */
export function renderExtendedDescription(d: { content: string; updatedAt: Date }) {
  return { updated_at: d.updatedAt.toISOString(), content: d.content };
}
