import type { AppContext } from '../context.ts';
import { recheckQuoteStamp } from '../federation/quotes.ts';

/**
 * The verifyQuoteStamp job: a remote quote whose stamp (FEP-044f QuoteAuthorization) could not be fetched when its
 * Note arrived (network error, timeout, 5xx) is checked again after a delay (federation/quotes.ts: queueStampRetry,
 * recheckQuoteStamp). Each attempt is its own delayed outbox row, so a retry survives restarts; a failed attempt queues
 * the next one and ends, rather than failing the job.
 */
export async function verifyQuoteStampJob(ctx: AppContext, data: { statusId: string; stampUri: string; attempt?: number }): Promise<void> {
  const fed = ctx.federation.createContext(new URL(ctx.config.publicUrl), ctx);
  await recheckQuoteStamp(fed, data.statusId, data.stampUri, data.attempt ?? 1);
}
