import type { AppContext } from '../../context.ts';
import type { AnnualReportRow } from '../../storage/annual-reports.ts';
import { findAccountsByIds } from '../../storage/accounts.ts';
import { namedInReport } from '../../services/annual-reports.ts';
import { renderAccount } from './account.ts';
import { renderStatuses } from './statuses.ts';

/** Mastodon's AnnualReport entity. No public page shows reports here, so `share_url` is null. */
export function renderAnnualReport(row: AnnualReportRow) {
  return {
    year: row.year,
    account_id: row.account_id,
    data: row.data,
    schema_version: row.schema_version,
    share_url: null,
  };
}

/**
 * WrappedAnnualReports: the reports with the accounts and statuses they name, rendered for the viewer as the API
 * renders them elsewhere (suspended accounts and statuses the viewer may not see are left out).
 */
export async function renderAnnualReports(ctx: AppContext, viewerId: string, rows: AnnualReportRow[]) {
  const named = rows.map((r) => namedInReport(r.data));
  const accountIds = [...new Set(named.flatMap((n) => n.accountIds))];
  const statusIds = [...new Set(named.flatMap((n) => n.statusIds))];
  const accounts = accountIds.length > 0 ? await findAccountsByIds(ctx.db, accountIds) : [];
  return {
    annual_reports: rows.map(renderAnnualReport),
    accounts: accounts.filter((a) => !a.suspended_at).map((a) => renderAccount(ctx.render, a)),
    statuses: statusIds.length > 0 ? await renderStatuses(ctx, viewerId, statusIds) : [],
  };
}
