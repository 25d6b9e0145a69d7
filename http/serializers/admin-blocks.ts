import type { CanonicalEmailBlockRow, EmailDomainBlockRow, IpBlockRow } from '../../storage/admin-blocks.ts';
import type { EmailDomainBlockHistoryDay } from '../../services/admin-blocks.ts';

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
