import type { CanonicalEmailBlockRow, EmailDomainBlockRow, IpBlockRow } from '../../storage/admin-blocks.ts';
import type { EmailDomainBlockHistoryDay } from '../../services/admin-blocks.ts';
import type { UsernameBlockRow } from '../../storage/username-blocks.ts';
import { comparisonOf } from '../../services/username-blocks.ts';

/** Mastodon's Admin::IpBlock entity. */
export function renderAdminIpBlock(b: IpBlockRow) {
  return {
    id: b.id,
    ip: b.ip,
    severity: b.severity,
    comment: b.comment,
    created_at: b.created_at.toISOString(),
    expires_at: b.expires_at ? b.expires_at.toISOString() : null,
  };
}

/** Mastodon's Admin::EmailDomainBlock entity, with the last week of refused sign-ups. */
export function renderAdminEmailDomainBlock(b: EmailDomainBlockRow, history: EmailDomainBlockHistoryDay[]) {
  return { id: b.id, domain: b.domain, created_at: b.created_at.toISOString(), history };
}

/** Mastodon's Admin::CanonicalEmailBlock entity. */
export function renderAdminCanonicalEmailBlock(b: CanonicalEmailBlockRow) {
  return { id: b.id, canonical_email_hash: b.canonical_email_hash };
}

/** Mastodon's Admin::UsernameBlock entity (4.5). */
export function renderAdminUsernameBlock(b: UsernameBlockRow) {
  return { id: b.id, username: b.username, comparison: comparisonOf(b), allow_with_approval: b.allow_with_approval };
}
