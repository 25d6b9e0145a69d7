import type { AppContext } from '../context.ts';
import { generateAnnualReport } from '../services/annual-reports.ts';

/**
 * The `generateAnnualReport` job (queued from the outbox row written with the request, services/annual-reports.ts):
 * computes one account's report of one year and stores it. Run twice, it stores the report once.
 */
export async function generateAnnualReportJob(ctx: AppContext, accountId: string, year: number): Promise<void> {
  await generateAnnualReport(ctx.db, accountId, year);
}
