// The admin dashboard's figures: measures (counts per day), dimensions (top lists and facts about the stack) and
// retention cohorts, computed from what PostgreSQL and Redis hold. The SQL is in storage/admin-metrics.ts.
import { mastersOf, type RedisClient } from '../storage/redis.ts';
import type { Db } from '../storage/db.ts';
import { isId } from '../storage/ids.ts';
import * as metrics from '../storage/admin-metrics.ts';
import type { DayRange, MeasureKey, MeasureResult } from '../storage/admin-metrics.ts';
import { LANGUAGES } from './languages.ts';

export { daysIn, isMeasureKey, type DayRange, type MeasureKey, type MeasureResult } from '../storage/admin-metrics.ts';

/** What a measure or dimension is asked about: `tag_accounts[id]`, `instance_statuses[domain]` and so on. */
export interface KeyOptions {
  id?: string;
  domain?: string;
  include_subdomains?: boolean;
}

const TAG_MEASURES = new Set<MeasureKey>(['tag_accounts', 'tag_uses', 'tag_servers']);

export async function measures(db: Db, keys: MeasureKey[], range: DayRange, options: Partial<Record<string, KeyOptions>>): Promise<MeasureResult[]> {
  const out: MeasureResult[] = [];
  // One after another: a dashboard asks for a dozen at once, and each is a query over the range.
  for (const key of keys) {
    const o = options[key] ?? {};
    let arg: string | null = null;
    if (TAG_MEASURES.has(key)) arg = o.id && isId(o.id) ? o.id : null;
    else if (key.startsWith('instance_')) arg = o.domain ? o.domain.trim().toLowerCase() || null : null;
    out.push(await metrics.measure(db, key, range, arg, o.include_subdomains === true));
  }
  return out;
}

export const DIMENSION_KEYS = ['languages', 'sources', 'servers', 'space_usage', 'software_versions', 'tag_servers', 'tag_languages', 'instance_accounts', 'instance_languages'] as const;
export type DimensionKey = (typeof DIMENSION_KEYS)[number];
export const isDimensionKey = (k: string): k is DimensionKey => (DIMENSION_KEYS as readonly string[]).includes(k);
/** Dimensions that read a range of days (the others are facts of now). */
export const RANGED_DIMENSIONS = new Set<DimensionKey>(['languages', 'sources', 'servers', 'tag_servers', 'tag_languages', 'instance_languages']);

export interface DimensionItem {
  key: string;
  humanKey: string;
  value: string;
  unit?: string;
  humanValue?: string;
}

export interface DimensionResult {
  key: DimensionKey;
  data: DimensionItem[];
}

export interface StackFacts {
  localDomain: string;
  softwareName: string;
  softwareVersion: string;
}

/** Bytes as Rails' number_to_human_size shows them: "512 Bytes", "1.5 KB", "12.3 MB" (three significant digits). */
export function humanSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} ${bytes === 1 ? 'Byte' : 'Bytes'}`;
  const units = ['KB', 'MB', 'GB', 'TB', 'PB'];
  let n = bytes;
  let i = -1;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${Number(n.toPrecision(3))} ${units[i]}`;
}

const languageItem = (r: { key: string; value: string }): DimensionItem => ({ key: r.key, humanKey: LANGUAGES.get(r.key) ?? r.key, value: r.value });

function infoField(info: string, field: string): string | null {
  const m = new RegExp(`^${field}:(.*)$`, 'm').exec(info);
  return m ? m[1]!.trim() : null;
}

/** Redis's memory in bytes, summed over a cluster's masters (its INFO answers for one node); replicas not counted. */
async function redisUsedMemory(redis: RedisClient): Promise<string> {
  const infos = await Promise.all(mastersOf(redis).map((node) => node.info('memory')));
  return String(infos.reduce((sum, info) => sum + (Number(infoField(info, 'used_memory') ?? 0) || 0), 0));
}

export async function dimensions(db: Db, redis: RedisClient, stack: StackFacts, keys: DimensionKey[], range: DayRange | null, limit: number, options: Partial<Record<string, KeyOptions>>): Promise<DimensionResult[]> {
  const out: DimensionResult[] = [];
  const tagOf = (key: string) => { const id = options[key]?.id; return id && isId(id) ? id : null; };
  const domainOf = (key: string) => options[key]?.domain?.trim().toLowerCase() || null;
  for (const key of keys) {
    let data: DimensionItem[] = [];
    // No range (Mastodon's NULL dates): a ranged dimension counts nothing.
    if (range === null && RANGED_DIMENSIONS.has(key)) {
      out.push({ key, data });
      continue;
    }
    switch (key) {
      case 'languages':
        data = (await metrics.languagesOfLocalPosts(db, range!, limit)).map(languageItem);
        break;
      case 'sources':
        // Sign-ups without an application came through the web pages.
        data = (await metrics.signUpSources(db, range!, limit)).map((r) => ({ key: r.key ?? 'web', humanKey: r.key ?? 'Website', value: r.value }));
        break;
      case 'servers':
        data = (await metrics.postingServers(db, range!, limit)).map((r) => ({ key: r.key, humanKey: r.key, value: r.value }));
        break;
      case 'space_usage': {
        const pg = await metrics.postgresFacts(db);
        const memory = await redisUsedMemory(redis);
        // Media sizes are not recorded per file, so the media store is not measured here.
        data = [
          { key: 'postgresql', humanKey: 'PostgreSQL', value: pg.bytes, unit: 'bytes', humanValue: humanSize(Number(pg.bytes)) },
          { key: 'redis', humanKey: 'Redis', value: memory, unit: 'bytes', humanValue: humanSize(Number(memory)) },
        ];
        break;
      }
      case 'software_versions': {
        const pg = await metrics.postgresFacts(db);
        // Any node's: a cluster's nodes run one version (but for the moments of a rolling upgrade).
        const redisVersion = infoField(await redis.info('server'), 'redis_version') ?? 'unknown';
        const node = process.versions.node;
        data = [
          { key: stack.softwareName, humanKey: stack.softwareName, value: stack.softwareVersion, humanValue: stack.softwareVersion },
          { key: 'nodejs', humanKey: 'Node.js', value: node, humanValue: node },
          { key: 'postgresql', humanKey: 'PostgreSQL', value: pg.version, humanValue: pg.version },
          { key: 'redis', humanKey: 'Redis', value: redisVersion, humanValue: redisVersion },
        ];
        break;
      }
      case 'tag_servers': {
        const tag = tagOf(key);
        if (tag) data = (await metrics.tagServers(db, tag, range!, limit)).map((r) => ({ key: r.key ?? stack.localDomain, humanKey: r.key ?? stack.localDomain, value: r.value }));
        break;
      }
      case 'tag_languages': {
        const tag = tagOf(key);
        if (tag) data = (await metrics.tagLanguages(db, tag, range!, limit)).map(languageItem);
        break;
      }
      case 'instance_accounts': {
        const domain = domainOf(key);
        if (domain) data = (await metrics.instanceAccounts(db, domain, limit)).map((r) => ({ key: r.key, humanKey: r.key, value: r.value }));
        break;
      }
      case 'instance_languages': {
        const domain = domainOf(key);
        if (domain) data = (await metrics.instanceLanguages(db, domain, range!, limit)).map(languageItem);
        break;
      }
    }
    out.push({ key, data });
  }
  return out;
}

export interface Cohort {
  period: string;
  frequency: 'day' | 'month';
  data: { date: string; rate: number; value: string }[];
}

export async function retention(db: Db, range: DayRange, frequency: 'day' | 'month'): Promise<Cohort[]> {
  const rows = await metrics.retention(db, range, frequency);
  const cohorts = new Map<string, Cohort>();
  for (const r of rows) {
    let c = cohorts.get(r.period);
    if (!c) cohorts.set(r.period, c = { period: r.period, frequency, data: [] });
    const size = Number(r.size);
    c.data.push({ date: r.date, rate: size === 0 ? 0 : Number(r.value) / size, value: r.value });
  }
  return [...cohorts.values()];
}
