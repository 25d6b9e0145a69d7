import type { RelationshipRow } from '../../storage/follows.ts';

/** Mastodon's Relationship entity; ids with no relation get every flag false. */
export function renderRelationship(id: string, r: RelationshipRow | undefined) {
  return {
    id,
    following: r?.following ?? false,
    showing_reblogs: r?.showing_reblogs ?? false,
    notifying: r?.notifying ?? false,
    languages: r?.languages ?? null,
    followed_by: r?.followed_by ?? false,
    blocking: r?.blocking ?? false,
    blocked_by: r?.blocked_by ?? false,
    muting: r?.muting ?? false,
    muting_notifications: r?.muting_notifications ?? false,
    muting_expires_at: r?.muting_expires_at?.toISOString() ?? null,
    requested: r?.requested ?? false,
    requested_by: r?.requested_by ?? false,
    domain_blocking: r?.domain_blocking ?? false,
    endorsed: r?.endorsed ?? false,
    note: r?.note ?? '',
  };
}
