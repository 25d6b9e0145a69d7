import { Type } from '../schema.ts';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { RouteOptions } from '../route-options.ts';
import * as dashboard from '../../services/admin-metrics.ts';
import type { DimensionKey, MeasureKey } from '../../services/admin-metrics.ts';
import { sendFormPage } from './page.ts';
import { operatorGuard } from './admin-access.ts';

/** What Mastodon's dashboard shows: its measures, the dimensions beside them, and the monthly retention. */
const MEASURES: readonly [MeasureKey, string][] = [
  ['new_users', 'New users'], ['active_users', 'Active users'], ['interactions', 'Interactions'],
  ['opened_reports', 'Reports opened'], ['resolved_reports', 'Reports resolved'],
];
const DIMENSIONS: readonly [DimensionKey, string][] = [
  ['sources', 'Sign-up sources'], ['languages', 'Languages of active users'], ['servers', 'Most active servers'],
  ['software_versions', 'Software'], ['space_usage', 'Space used'],
];
const RANGES = [7, 30, 90] as const;

const day = (d: Date) => d.toISOString().slice(0, 10);

/**
 * The dashboard (Mastodon's Admin::DashboardController) drawn on the server: the same measures, dimensions and
 * retention as POST /api/v1/admin/measures, /dimensions and /retention, as SVG bars that need no script.
 */
export default async function adminDashboardPageRoutes(fastify: FastifyInstance, { ctx }: RouteOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const operator = operatorGuard(ctx);

  app.get('/admin/dashboard', { schema: { querystring: Type.Object({ days: Type.Optional(Type.String({ maxLength: 3 })) }) } }, async (request, reply) => {
    if (!(await operator(request, reply))) return;
    const days = RANGES.find((d) => String(d) === request.query.days) ?? 30;
    const end = new Date();
    const range = { start: day(new Date(end.getTime() - (days - 1) * 86_400_000)), end: day(end) };
    // Six months of monthly cohorts, as Mastodon's dashboard shows.
    const retentionStart = new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() - 5, 1));
    const stack = { localDomain: ctx.config.localDomain, softwareName: 'fedi-server', softwareVersion: ctx.config.softwareVersion };
    const [measures, dimensions, cohorts] = await Promise.all([
      dashboard.measures(ctx.db, MEASURES.map(([k]) => k), range, {}),
      dashboard.dimensions(ctx.db, ctx.redis, stack, DIMENSIONS.map(([k]) => k), range, 8, {}),
      dashboard.retention(ctx.db, { start: day(retentionStart), end: range.end }, 'month'),
    ]);
    const label = (list: readonly (readonly [string, string])[], key: string) => list.find(([k]) => k === key)?.[1] ?? key;
    return sendFormPage(ctx, request, reply, 'admin/dashboard', 'Dashboard', {
      days, ranges: RANGES, range,
      measures: measures.map((m) => {
        const values = m.data.map((d) => Number(d.value));
        return {
          key: m.key, label: label(MEASURES, m.key), total: m.total, previousTotal: m.previousTotal,
          max: Math.max(1, ...values), data: m.data.map((d) => ({ day: d.day, value: Number(d.value) })),
        };
      }),
      dimensions: dimensions.map((d) => {
        const values = d.data.map((x) => Number(x.value));
        return { key: d.key, label: label(DIMENSIONS, d.key), max: Math.max(1, ...values), data: d.data };
      }),
      cohorts: cohorts.map((c) => ({ period: c.period.slice(0, 7), data: c.data.map((d) => ({ date: d.date.slice(0, 7), rate: d.rate, value: d.value })) })),
      notice: '', error: '',
    });
  });
}
