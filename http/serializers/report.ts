import type { Queryable } from '../../storage/db.ts';
import type { AccountRow } from '../../storage/accounts.ts';
import { findAccountsByIds } from '../../storage/accounts.ts';
import { mentionsOf, tagsOf } from '../../storage/statuses.ts';
import { mediaOfStatuses } from '../../storage/media.ts';
import { reportedStatuses, type ReportRow } from '../../storage/reports.ts';
import { listRules } from '../../storage/rules.ts';
import type { StatusBundle } from '../../services/hydrate.ts';
import type { RenderContext } from './context.ts';
import { renderAccount } from './account.ts';
import { renderStatus } from './status.ts';
import { renderRule } from './instance.ts';
import { loadAdminAccounts } from './admin-account.ts';
import { statusApplicationsByIds } from '../../storage/oauth.ts';

/** What Report and Admin::Report share. */
function reportFields(r: ReportRow) {
  return {
    id: r.id,
    action_taken: r.action_taken_at !== null,
    action_taken_at: r.action_taken_at?.toISOString() ?? null,
    category: r.category,
    comment: r.comment,
    forwarded: r.forwarded,
    created_at: r.created_at.toISOString(),
  };
}

/** Mastodon's Report entity, as its reporter sees it. */
export function renderReport(ctx: RenderContext, r: ReportRow, target: AccountRow) {
  return {
    ...reportFields(r),
    status_ids: r.status_ids,
    rule_ids: r.rule_ids.length > 0 ? r.rule_ids : null,
    collection_ids: [],
    target_account: renderAccount(ctx, target),
  };
}

/**
 * Mastodon's Admin::Report entities: each with its reporter, target, assignee and resolver as Admin::Account, its
 * statuses (deleted ones and those of suspended accounts too: moderators see what was reported) and its rules.
 */
export async function renderAdminReports(db: Queryable, ctx: RenderContext, reports: ReportRow[]) {
  if (reports.length === 0) return [];
  const accountIds = reports.flatMap((r) => [r.account_id, r.target_account_id, r.assigned_account_id, r.action_taken_by_account_id]).filter((id): id is string => !!id);
  const statusIds = [...new Set(reports.flatMap((r) => r.status_ids))];
  const statuses = (await reportedStatuses(db, statusIds)).filter((s) => s.reblog_of_id === null);
  const wantsRules = reports.some((r) => r.rule_ids.length > 0);
  const [admins, mentions, tags, media, rules, applications] = await Promise.all([
    loadAdminAccounts(db, ctx, accountIds),
    mentionsOf(db, statusIds),
    tagsOf(db, statusIds),
    mediaOfStatuses(db, statusIds),
    wantsRules ? listRules(db) : Promise.resolve([]),
    statusApplicationsByIds(db, [...new Set(statuses.map((s) => s.application_id).filter((id): id is string => !!id))]),
  ]);
  const authors = await findAccountsByIds(db, [...new Set([...statuses.map((s) => s.account_id), ...[...mentions.values()].flat()])]);
  const bundle: StatusBundle = {
    statuses: new Map(statuses.map((s) => [s.id, s])),
    accounts: new Map(authors.map((a) => [a.id, a])),
    mentions,
    tags,
    media,
    applications,
    favourited: new Set(),
    reblogged: new Set(),
    viewerId: null,
  };
  const rendered = new Map(statuses.filter((s) => bundle.accounts.has(s.account_id)).map((s) => [s.id, renderStatus(ctx, bundle, s)]));
  const ruleById = new Map(rules.map((r) => [r.id, r]));
  const admin = (id: string | null) => (id ? admins.get(id) ?? null : null);
  return reports.flatMap((r) => {
    const account = admin(r.account_id);
    const target = admin(r.target_account_id);
    if (!account || !target) return [];
    return [{
      ...reportFields(r),
      updated_at: r.updated_at.toISOString(),
      account,
      target_account: target,
      assigned_account: admin(r.assigned_account_id),
      action_taken_by_account: admin(r.action_taken_by_account_id),
      statuses: r.status_ids.map((id) => rendered.get(id)).filter((s) => !!s),
      rules: r.rule_ids.map((id) => ruleById.get(id)).filter((x) => !!x).map(renderRule),
    }];
  });
}
