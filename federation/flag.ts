import { domainPolicy } from '../services/domain-policy.ts';
import { Flag } from '@fedify/vocab';
import type { Context, InboxContext } from '@fedify/fedify';
import type { AppContext } from '../context.ts';
import { findAccountById, type AccountRow } from '../storage/accounts.ts';
import { findReport, insertReport, reportedStatusUris } from '../storage/reports.ts';
import { queueWebhookEventNow } from '../services/webhooks.ts';
import { statusUri } from '../services/uris.ts';
import { INSTANCE_ACTOR } from './instance-actor.ts';
import { accountForActorUri } from './remote-accounts.ts';
import { localActor, statusByUri } from './remote-statuses.ts';

/** How many objects of a received Flag are looked at: a report names an account and a few of its posts. */
const MAX_OBJECTS = 100;

/**
 * A forwarded report as Mastodon sends it: a `Flag` by the instance actor (the reporter stays anonymous to the other
 * server), its object the reported account and statuses, its content the comment. Null when it is not to be sent.
 */
export async function flagOf(fed: Context<AppContext>, reportId: string): Promise<{ flag: Flag; target: AccountRow } | null> {
  const app = fed.data;
  const report = await findReport(app.db, reportId);
  const target = report ? await findAccountById(app.db, report.target_account_id) : null;
  if (!report || !report.forwarded || !target || target.domain === null || !target.uri) return null;
  const statuses = await reportedStatusUris(app.db, report.status_ids);
  const objects = [new URL(target.uri), ...statuses.map((s) => new URL(statusUri(app.render, s, target.username)))];
  const flag = new Flag({
    id: new URL(`/flags/${report.id}`, app.config.publicUrl),
    actor: fed.getActorUri(INSTANCE_ACTOR),
    objects,
    content: report.comment,
  });
  return { flag, target };
}

/**
 * A `Flag` from another server (Mastodon's ActivityPub::Activity::Flag): one report per local account it names,
 * with the statuses of that account it names, the content as the comment, filed by the sending actor (usually that
 * server's instance actor). The same Flag twice files nothing more.
 */
export async function onFlag(fed: InboxContext<AppContext>, flag: Flag): Promise<void> {
  if (!flag.actorId || !flag.id) return;
  const reporter = await accountForActorUri(fed.data, fed, flag.actorId.href);
  if (!reporter || reporter.domain === null || reporter.suspended_at) return;
  // A server whose reports the operator rejects (an instance domain block with reject_reports) files none here.
  if (await domainPolicy(fed.data).rejectsReports(reporter.domain)) return;
  // A Flag's id is its sender's to mint.
  if (!reporter.uri || new URL(reporter.uri).origin !== flag.id.origin) return;
  const targets = new Map<string, AccountRow>();
  const statuses: { id: string; accountId: string }[] = [];
  for (const uri of flag.objectIds.slice(0, MAX_OBJECTS)) {
    const account = await localActor(fed, uri);
    if (account) {
      targets.set(account.id, account);
      continue;
    }
    const status = await statusByUri(fed, uri);
    if (status && status.uri === null) statuses.push({ id: status.id, accountId: status.account_id });
  }
  // A status of ours named alone names its author too.
  for (const s of statuses) {
    if (!targets.has(s.accountId)) {
      const author = await findAccountById(fed.data.db, s.accountId);
      if (author && author.domain === null && !author.suspended_at) targets.set(author.id, author);
    }
  }
  const comment = String(flag.content ?? '').slice(0, 5000);
  let first = true;
  for (const target of targets.values()) {
    const report = await insertReport(fed.data.db, {
      accountId: reporter.id,
      targetAccountId: target.id,
      statusIds: statuses.filter((s) => s.accountId === target.id).map((s) => s.id),
      ruleIds: [],
      comment,
      category: 'other',
      forwarded: false,
      uri: first ? flag.id.href : `${flag.id.href}#${target.id}`,
    });
    // Right after the report (its own statement): the operators' webhooks hear of it (report.created).
    if (report) await queueWebhookEventNow(fed.data, 'report.created', report.id);
    first = false;
  }
}
