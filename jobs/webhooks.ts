import type { AppContext } from '../context.ts';
import type { Job } from './bullmq.ts';
import { findWebhook, recordWebhookDelivery } from '../storage/webhooks.ts';
import { findReport } from '../storage/reports.ts';
import { findStatus } from '../storage/statuses.ts';
import { guardedPost } from '../services/guarded-fetch.ts';
import { WEBHOOK_DELIVERIES_KEPT, webhookSignature } from '../services/webhooks.ts';
import { loadAdminAccounts } from '../http/serializers/admin-account.ts';
import { renderAdminReports } from '../http/serializers/report.ts';
import { renderStatuses } from '../http/serializers/statuses.ts';
import { userAgent } from './link-cards.ts';

export interface WebhookDeliveryJob {
  webhookId: string;
  event: string;
  objectId: string;
  createdAt: string;
}

/** What is read of a receiver's answer: only its status matters. */
const ANSWER_BYTES = 64 * 1024;
const TIMEOUT_MS = 10_000;

/** A webhook's event's object as the API renders it: Admin::Account, Admin::Report or Status (Mastodon's WebhookService). */
async function renderObject(ctx: AppContext, event: string, id: string): Promise<unknown> {
  if (event.startsWith('account.')) return (await loadAdminAccounts(ctx.db, ctx.render, [id])).get(id) ?? null;
  if (event.startsWith('report.')) {
    const report = await findReport(ctx.db, id);
    return report ? ((await renderAdminReports(ctx.db, ctx.render, [report]))[0] ?? null) : null;
  }
  // A status as its author sees it: operators get every local status, whoever may read it.
  const status = await findStatus(ctx.db, id);
  return status ? ((await renderStatuses(ctx, status.account_id, [id]))[0] ?? null) : null;
}

/**
 * The deliverWebhook job (Mastodon's Webhooks::DeliveryWorker): the event's object rendered, the body signed with the
 * webhook's secret and POSTed through the guarded fetch (public addresses only unless ALLOW_PRIVATE_ADDRESSES, 10 s,
 * the answer capped). Each attempt is recorded for the operators' page. An answer other than 2xx, or none, fails
 * the job so that BullMQ retries it with backoff (jobs/queues.ts WEBHOOK_RETRIES); the last attempt's failure is
 * recorded and ends it. A webhook removed or disabled meanwhile, or an object gone, ends it quietly.
 */
export async function deliverWebhookJob(ctx: AppContext, data: WebhookDeliveryJob, job: Pick<Job, 'attemptsMade' | 'opts'>): Promise<void> {
  const webhook = await findWebhook(ctx.db, data.webhookId);
  if (!webhook || !webhook.enabled) return;
  const object = await renderObject(ctx, data.event, data.objectId);
  if (!object) return;
  const body = Buffer.from(JSON.stringify({ event: data.event, created_at: data.createdAt, object }));
  const attempt = job.attemptsMade + 1;
  let statusCode: number | null = null;
  let error: string | null = null;
  try {
    const answer = await guardedPost(new URL(webhook.url), body, {
      headers: { 'content-type': 'application/json', 'x-hub-signature': webhookSignature(webhook.secret, body) },
      maxBytes: ANSWER_BYTES, allowPrivateAddresses: ctx.config.allowPrivateAddresses, userAgent: userAgent(ctx), timeoutMs: TIMEOUT_MS,
    });
    statusCode = answer.status;
    if (statusCode < 200 || statusCode > 299) error = `answered ${statusCode}`;
  } catch (err) {
    error = (err as Error).message || String(err);
  }
  await recordWebhookDelivery(ctx.db, { webhookId: webhook.id, event: data.event, attempt, statusCode, error }, WEBHOOK_DELIVERIES_KEPT);
  if (error && attempt < (job.opts.attempts ?? 1)) throw new Error(`webhook ${webhook.id}: ${error}`);
}
