import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RouteOptions } from '../../../route-options.ts';
import { unprocessable } from '../../../../errors.ts';
import * as dashboard from '../../../../services/admin-metrics.ts';
import type { DayRange, KeyOptions, MeasureKey, DimensionKey } from '../../../../services/admin-metrics.ts';
import { renderCohort, renderDimension, renderMeasure } from '../../../serializers/admin-metrics.ts';

const READ = { kind: 'admin', scopes: ['admin:read'] } as const;

/** The longest range a measure or dimension reads, and a daily retention (which is quadratic in its days). */
const MAX_DAYS = 366;
const MAX_RETENTION_DAYS = 92;
const MAX_KEYS = 30;

type Params = Record<string, unknown>;

/** Mastodon reads these from the query string and the body alike (JSON, form or multipart). */
function paramsOf(request: FastifyRequest): Params {
  const query = (request.query ?? {}) as Params;
  const body = request.body && typeof request.body === 'object' && !Array.isArray(request.body) ? request.body as Params : {};
  return { ...query, ...body };
}

/** A day from `2022-09-14` or `2022-09-14T10:00:00Z` (a time is ignored, as Mastodon says). */
function dayOf(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') throw unprocessable(`${name} is missing`);
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ].*)?$/.exec(value.trim());
  if (!m) throw unprocessable(`${name} is not a date`);
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(y, mo - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d || y < 1970) throw unprocessable(`${name} is not a date`);
  return date.toISOString().slice(0, 10);
}

function rangeOf(p: Params, maxDays: number): DayRange {
  const range = { start: dayOf(p.start_at, 'start_at'), end: dayOf(p.end_at, 'end_at') };
  if (range.end < range.start) throw unprocessable('end_at is before start_at');
  if (dashboard.daysIn(range) > maxDays) throw unprocessable(`The range is longer than ${maxDays} days`);
  return range;
}

/** `keys[]=a&keys[]=b`, `keys=a` or a JSON array; unknown keys are left out, as Mastodon does. */
function keysOf<K extends string>(p: Params, known: (k: string) => k is K): K[] {
  const raw = p.keys;
  const list = Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : raw === undefined ? [] : null;
  if (list === null || list.length > MAX_KEYS || list.some((k) => typeof k !== 'string')) throw unprocessable('keys is not a list of keys');
  return [...new Set((list as string[]).filter(known))];
}

const TRUE = new Set(['true', '1', 't', 'on']);

/** Each key's options: `tag_uses[id]`, `instance_statuses[domain]`, `instance_statuses[include_subdomains]`. */
function optionsOf(p: Params, keys: readonly string[]): Partial<Record<string, KeyOptions>> {
  const out: Partial<Record<string, KeyOptions>> = {};
  for (const key of keys) {
    const o = p[key];
    if (!o || typeof o !== 'object' || Array.isArray(o)) continue;
    const { id, domain, include_subdomains: sub } = o as Record<string, unknown>;
    out[key] = {
      id: typeof id === 'string' || typeof id === 'number' ? String(id) : undefined,
      domain: typeof domain === 'string' ? domain.slice(0, 253) : undefined,
      include_subdomains: sub === true || (typeof sub === 'string' && TRUE.has(sub.toLowerCase())),
    };
  }
  return out;
}

function limitOf(p: Params): number {
  if (p.limit === undefined || p.limit === null || p.limit === '') return 10;
  const n = Number(p.limit);
  if (!Number.isInteger(n)) throw unprocessable('limit is not a number');
  return Math.min(Math.max(n, 1), 100);
}

const blank = (value: unknown) => value === undefined || value === null || value === '';

/**
 * The range asked for, or null when `start_at` or `end_at` is missing: Mastodon then compares the days with NULL,
 * which matches none, so ranged dimensions have no data and retention no cohorts (a date given must still be one).
 */
function rangeOrNone(p: Params, maxDays: number): DayRange | null {
  if (!blank(p.start_at) && !blank(p.end_at)) return rangeOf(p, maxDays);
  if (!blank(p.start_at)) dayOf(p.start_at, 'start_at');
  if (!blank(p.end_at)) dayOf(p.end_at, 'end_at');
  return null;
}

/** Mastodon's admin dashboard data: POST /api/v1/admin/measures, /dimensions and /retention. */
export default async function adminDashboardRoutes(app: FastifyInstance, { ctx }: RouteOptions) {
  app.post('/api/v1/admin/measures', { config: { auth: READ } }, async (request) => {
    const p = paramsOf(request);
    const keys = keysOf<MeasureKey>(p, dashboard.isMeasureKey);
    const range = rangeOf(p, MAX_DAYS);
    const results = await dashboard.measures(ctx.db, keys, range, optionsOf(p, keys));
    return results.map(renderMeasure);
  });

  app.post('/api/v1/admin/dimensions', { config: { auth: READ } }, async (request) => {
    const p = paramsOf(request);
    const keys = keysOf<DimensionKey>(p, dashboard.isDimensionKey);
    // The software and its space are facts of now; the others read the range, and have no data without one.
    const range = rangeOrNone(p, MAX_DAYS);
    const stack = { localDomain: ctx.config.localDomain, softwareName: 'fedi-server', softwareVersion: ctx.config.softwareVersion };
    const results = await dashboard.dimensions(ctx.db, ctx.redis, stack, keys, range, limitOf(p), optionsOf(p, keys));
    return results.map(renderDimension);
  });

  app.post('/api/v1/admin/retention', { config: { auth: READ } }, async (request) => {
    const p = paramsOf(request);
    // Anything but `month` is a daily retention, as in Mastodon.
    const frequency = p.frequency === 'month' ? 'month' : 'day';
    const range = rangeOrNone(p, frequency === 'day' ? MAX_RETENTION_DAYS : MAX_DAYS);
    if (!range) return [];
    return (await dashboard.retention(ctx.db, range, frequency)).map(renderCohort);
  });
}
