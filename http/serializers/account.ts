import { accountImageUrl } from '../../services/media-urls.ts';
import { movedTarget, type AccountRow } from '../../storage/accounts.ts';
import type { UserRoleSummary, UserRow } from '../../storage/users.ts';
import type { RenderContext } from './context.ts';
import { accountUri } from '../../services/uris.ts';
import { renderEmoji } from './custom-emoji.ts';

function dateOnly(d: Date | null): string | null {
  return d ? d.toISOString().slice(0, 10) : null;
}

function midnight(d: Date): string {
  // Mastodon shows the day an account was made, not the moment (it is public information).
  return `${d.toISOString().slice(0, 10)}T00:00:00.000Z`;
}

/** Mastodon's Account entity. */
export function renderAccount(ctx: RenderContext, a: AccountRow) {
  const target = movedTarget(a);
  // `moved`: the account it moved to, rendered in full as Mastodon does (one level: that one's own move is not).
  return target ? { ...accountEntity(ctx, a), moved: accountEntity(ctx, target) } : accountEntity(ctx, a);
}

function accountEntity(ctx: RenderContext, a: AccountRow) {
  const local = a.domain === null;
  const avatar = accountImageUrl(ctx, a, 'avatar');
  const header = accountImageUrl(ctx, a, 'header');
  return {
    id: a.id,
    username: a.username,
    acct: local ? a.username : `${a.username}@${a.domain}`,
    display_name: a.display_name,
    locked: a.locked,
    bot: a.bot,
    discoverable: a.discoverable,
    indexable: a.indexable,
    // A remote Group actor (a Lemmy community, a Friendica forum), as Mastodon shows it.
    group: a.actor_type === 'Group',
    created_at: midnight(a.created_at),
    note: a.note_html,
    url: local ? `${ctx.publicUrl}/@${a.username}` : (a.url ?? a.uri),
    uri: accountUri(ctx, a),
    avatar,
    avatar_static: avatar,
    avatar_description: a.avatar_description,
    header,
    header_static: header,
    header_description: a.header_description,
    followers_count: a.followers_count,
    following_count: a.following_count,
    statuses_count: a.statuses_count,
    last_status_at: dateOnly(a.last_status_at),
    hide_collections: a.hide_collections,
    noindex: a.noindex,
    emojis: (a.emojis ?? []).map((e) => renderEmoji(ctx, e)),
    roles: a.role ? [{ id: a.role.id, name: a.role.name, color: a.role.color }] : [],
    fields: a.fields.map((f) => ({ name: f.name, value: f.value_html, verified_at: f.verified_at })),
    ...(a.suspended_at ? { suspended: true } : {}),
    ...(a.silenced_at ? { limited: true } : {}),
  };
}

/** A user without a role has Mastodon's "everyone" role (id -99), which grants nothing here. */
export const EVERYONE_ROLE = { id: '-99', name: '', permissions: '0', color: '', highlighted: false };

/** Mastodon's REST::RoleSerializer: a user's role with its permission bits as a string. */
export function renderRole(role: UserRoleSummary | null) {
  return role ? { id: role.id, name: role.name, permissions: role.permissions, color: role.color, highlighted: role.highlighted } : EVERYONE_ROLE;
}

/** The signed-in user's own account: Account plus `source` and `role`. */
export function renderCredentialAccount(ctx: RenderContext, a: AccountRow, user: UserRow, followRequestsCount: number) {
  return {
    ...renderAccount(ctx, a),
    source: {
      privacy: user.default_privacy,
      sensitive: user.default_sensitive,
      language: user.default_language,
      quote_policy: user.default_quote_policy ?? 'public',
      note: a.note_source,
      fields: a.fields.map((f) => ({ name: f.name, value: f.value, verified_at: f.verified_at })),
      follow_requests_count: followRequestsCount,
      indexable: a.indexable,
      discoverable: a.discoverable,
      hide_collections: a.hide_collections,
      attribution_domains: [],
    },
    role: renderRole(user.role),
  };
}
