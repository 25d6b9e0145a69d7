import { createHash } from 'node:crypto';
import type { DomainAllowRow, DomainBlockRow } from '../../storage/instance-domain-blocks.ts';
import { obfuscatedDomain } from '../../services/domain-policy.ts';

const digest = (domain: string) => createHash('sha256').update(domain).digest('hex');

/** Mastodon's Admin::DomainBlock entity. */
export function renderAdminDomainBlock(b: DomainBlockRow) {
  return {
    id: b.id,
    domain: b.domain,
    digest: digest(b.domain),
    created_at: b.created_at.toISOString(),
    severity: b.severity,
    reject_media: b.reject_media,
    reject_reports: b.reject_reports,
    private_comment: b.private_comment,
    public_comment: b.public_comment,
    obfuscate: b.obfuscate,
  };
}

/** Mastodon's Admin::DomainAllow entity. */
export function renderAdminDomainAllow(a: DomainAllowRow) {
  return { id: a.id, domain: a.domain, created_at: a.created_at.toISOString() };
}

/** Mastodon's DomainBlock entity (the public list): the domain starred when obfuscated, its digest always whole. */
export function renderDomainBlock(b: DomainBlockRow, withComment: boolean) {
  return {
    domain: b.obfuscate ? obfuscatedDomain(b.domain) : b.domain,
    digest: digest(b.domain),
    severity: b.severity,
    ...(withComment ? { comment: b.public_comment } : {}),
  };
}

/** Mastodon's answer to a block of a domain already covered by one (422). */
export function renderExistingDomainBlockError(existing: DomainBlockRow) {
  return {
    error: `You have already imposed stricter limits on ${existing.domain}.`,
    existing_domain_block: renderAdminDomainBlock(existing),
  };
}
