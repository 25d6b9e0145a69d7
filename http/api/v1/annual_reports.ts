import { Type } from '../../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../../route-options.ts';
import { requireViewer } from '../../plugins/auth.ts';
import { notFound } from '../../../errors.ts';
import { annualReportState, requestAnnualReport } from '../../../services/annual-reports.ts';
import { findAnnualReport, markAnnualReportViewed, pendingAnnualReports } from '../../../storage/annual-reports.ts';
import { renderAnnualReports } from '../../serializers/annual-report.ts';

/** A year in a path, or null when it cannot be one (such a year has no report: 404, or `ineligible`). */
function yearOf(value: string): number | null {
  return /^\d{4}$/.test(value) ? Number(value) : null;
}

/**
 * Annual reports, as Mastodon 4.3+ (`state` and `generate` as 4.6 has them): `read:accounts` to read, `write:accounts`
 * to ask for one or mark it read; users' tokens only. See services/annual-reports.ts for which years may be asked for.
 */
export default async function annualReportsRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const read = { auth: { kind: 'user' as const, scopes: ['read:accounts'] } };
  const write = { auth: { kind: 'user' as const, scopes: ['write:accounts'] } };
  const params = { params: Type.Object({ year: Type.String({ maxLength: 40 }) }) };

  // The reports generated and not yet marked read, as Mastodon lists them.
  app.get('/api/v1/annual_reports', { config: read }, async (request) => {
    const viewerId = requireViewer(request);
    return renderAnnualReports(ctx, viewerId, await pendingAnnualReports(ctx.db, viewerId));
  });

  app.get('/api/v1/annual_reports/:year', { schema: params, config: read }, async (request) => {
    const viewerId = requireViewer(request);
    const year = yearOf(request.params.year);
    const row = year === null ? null : await findAnnualReport(ctx.db, viewerId, year);
    if (!row?.data) throw notFound();
    return renderAnnualReports(ctx, viewerId, [row]);
  });

  app.get('/api/v1/annual_reports/:year/state', { schema: params, config: read }, async (request) => {
    const viewerId = requireViewer(request);
    const year = yearOf(request.params.year);
    return { state: year === null ? 'ineligible' : await annualReportState(ctx.db, viewerId, year) };
  });

  // 202 when a report is (now) being made; otherwise (there already, or not to be had) an empty 200, as Mastodon. The
  // 202 carries `{}` (Mastodon's is bodiless) so that clients which parse every answer as JSON, masto among them, can.
  app.post('/api/v1/annual_reports/:year/generate', { schema: params, config: write }, async (request, reply) => {
    const viewerId = requireViewer(request);
    const year = yearOf(request.params.year);
    const state = year === null ? 'ineligible' : await requestAnnualReport(ctx, viewerId, year);
    if (state === 'generating') return reply.code(202).send({});
    return {};
  });

  app.post('/api/v1/annual_reports/:year/read', { schema: params, config: write }, async (request) => {
    const viewerId = requireViewer(request);
    const year = yearOf(request.params.year);
    if (year === null || !(await markAnnualReportViewed(ctx.db, viewerId, year))) throw notFound();
    return {};
  });
}
