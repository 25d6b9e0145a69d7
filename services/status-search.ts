import type { AppContext } from '../context.ts';
import { ApiError } from '../errors.ts';
import { findAccountByUsername } from '../storage/accounts.ts';
import { findUserByAccountId } from '../storage/users.ts';
import { isId } from '../storage/ids.ts';
import type { PageParams } from '../storage/paging.ts';
import { searchStatusIds, statusIdByLink, type StatusSearch, type StatusSearchFilter } from '../storage/search.ts';
import type { Queryable } from '../storage/db.ts';

/** A clause of a query: `[+-]` then an optional known `prefix:`, then a "quoted phrase" or a run of non-spaces. */
const CLAUSE = /([+-]?)(?:(from|has|is|language|lang|before|after|during|in|domain):)?(?:"([^"]*)"|(\S+))/iy;
const SPACE = /\s+/y;
const DATE = /^(\d{4})-(\d{2})(?:-(\d{2})(?:T(\d{2})(?::(\d{2})(?::(\d{2})(?:\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?)?)?$/i;
const LANGUAGE = /^[a-z]{2,3}(?:[-_][a-z0-9]{2,8})?$/i;

const syntaxError = (message: string) => new ApiError(422, message);

export interface ParsedStatusQuery {
  words: string[];
  phrases: string[];
  excludedWords: string[];
  excludedPhrases: string[];
  scope: StatusSearch['scope'];
  /** As written: `from:` still names accounts (resolved by searchStatuses). */
  filters: (StatusSearchFilter | { kind: 'from-name'; name: string; negated: boolean })[];
}

/** A date as Mastodon's `before:`/`after:`/`during:` take it (`2024-05-01`, `2024-05`, `2024-05-01T12:30`), in UTC unless a zone is given. */
function parseDate(prefix: string, value: string): Date {
  const m = DATE.exec(value);
  if (!m) throw syntaxError(`Invalid date for ${prefix}: prefix: ${value}`);
  const [, y, mo, d = '01', h = '00', mi = '00', sec = '00', zone = 'Z'] = m;
  const at = new Date(`${y}-${mo}-${d}T${h}:${mi}:${sec}${zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone.toUpperCase()}`);
  if (Number.isNaN(at.getTime())) throw syntaxError(`Invalid date for ${prefix}: prefix: ${value}`);
  return at;
}

/**
 * Mastodon's search syntax (SearchQueryParser, SearchQueryTransformer), as far as this server can honour it:
 * words and "quoted phrases" (all must match), `-word` and `-"phrase"` (must not), `+word` (same as a word),
 * `from:me` / `from:user` / `from:user@domain`, `has:media|image|video|audio|poll`, `is:reply|sensitive|local`,
 * `language:xx`, `domain:host`, `before:`/`after:`/`during:` a date, and `in:all|library|public`; each filter
 * but dates and `in:` may be negated with `-`. A known prefix with a value it does not take is a 422, as in Mastodon.
 */
export function parseStatusQuery(q: string): ParsedStatusQuery {
  const out: ParsedStatusQuery = { words: [], phrases: [], excludedWords: [], excludedPhrases: [], scope: 'all', filters: [] };
  let at = 0;
  while (at < q.length) {
    SPACE.lastIndex = at;
    if (SPACE.exec(q)) at = SPACE.lastIndex;
    if (at >= q.length) break;
    CLAUSE.lastIndex = at;
    const m = CLAUSE.exec(q);
    if (!m) break; // unreachable: a run of non-spaces always matches
    at = CLAUSE.lastIndex;
    const [, op = '', rawPrefix, quoted, bare] = m;
    const negated = op === '-';
    const value = (quoted ?? bare ?? '').trim();
    if (!rawPrefix) {
      if (!value) continue;
      if (quoted !== undefined) (negated ? out.excludedPhrases : out.phrases).push(value);
      else (negated ? out.excludedWords : out.words).push(value);
      continue;
    }
    const prefix = rawPrefix.toLowerCase();
    const term = value.toLowerCase();
    switch (prefix) {
      case 'from':
        out.filters.push({ kind: 'from-name', name: value, negated });
        break;
      case 'has':
        if (term !== 'media' && term !== 'image' && term !== 'video' && term !== 'audio' && term !== 'poll') {
          throw syntaxError(`Unknown or unsupported keyword for has: prefix: ${value}`);
        }
        out.filters.push({ kind: 'has', what: term, negated });
        break;
      case 'is':
        if (term !== 'reply' && term !== 'sensitive' && term !== 'local') throw syntaxError(`Unknown keyword for is: prefix: ${value}`);
        out.filters.push({ kind: 'is', what: term, negated });
        break;
      case 'language':
      case 'lang':
        if (!LANGUAGE.test(value)) throw syntaxError(`Unknown language for ${prefix}: prefix: ${value}`);
        out.filters.push({ kind: 'language', code: term.split(/[-_]/)[0]!, negated });
        break;
      case 'domain':
        out.filters.push({ kind: 'domain', domain: term, negated });
        break;
      case 'before':
      case 'after':
      case 'during': {
        if (op) throw syntaxError('Operator not allowed for date range');
        const date = parseDate(prefix, value);
        if (prefix === 'before') out.filters.push({ kind: 'before', at: date });
        else if (prefix === 'after') out.filters.push({ kind: 'after', at: date });
        else out.filters.push({ kind: 'after', at: date }, { kind: 'before', at: new Date(date.getTime() + 86_400_000) });
        break;
      }
      case 'in':
        if (op) throw syntaxError('Operator not allowed for in: prefix');
        if (term !== 'all' && term !== 'library' && term !== 'public') throw syntaxError(`Unknown keyword for in: prefix: ${value}`);
        out.scope = term;
        break;
    }
  }
  return out;
}

export interface StatusSearchOptions {
  /** `account_id`: only this author's statuses. */
  accountId?: string | undefined;
  page: PageParams;
  offset: number;
}

/**
 * Whether a query is searched as words. Mastodon leaves a lone `#tag` or a lone token with an `@` (an account's
 * handle) to the hashtag and account searches; `from:user@domain` alone is still a status search here.
 */
export function isWordQuery(q: string): boolean {
  if (/^https?:\/\//i.test(q)) return false;
  if (/\s/.test(q)) return true;
  return !(q.startsWith('#') || (q.includes('@') && !/^[+-]?from:/i.test(q)));
}

/** The ids of the statuses a signed-in viewer finds with a word query, newest first. */
export async function searchStatuses(ctx: AppContext, viewerId: string, q: string, o: StatusSearchOptions): Promise<string[]> {
  const parsed = parseStatusQuery(q);
  const filters: StatusSearchFilter[] = [];
  for (const f of parsed.filters) {
    if (f.kind === 'from-name') filters.push({ kind: 'from', accountId: await authorId(ctx, viewerId, f.name), negated: f.negated });
    else if (f.kind === 'domain') filters.push({ ...f, domain: f.domain === ctx.config.localDomain.toLowerCase() ? null : f.domain });
    else filters.push(f);
  }
  if (o.accountId !== undefined) filters.push({ kind: 'from', accountId: isId(o.accountId) ? o.accountId : null, negated: false });
  // Something must narrow the search: a word or phrase, or an author (served by the author's index).
  const hasWords = parsed.words.length > 0 || parsed.phrases.length > 0;
  if (!hasWords && !filters.some((f) => f.kind === 'from' && !f.negated)) return [];

  // Words are stemmed in the language asked for with `language:`, else in the viewer's posting language or locale.
  const asked = filters.find((f): f is Extract<StatusSearchFilter, { kind: 'language' }> => f.kind === 'language' && !f.negated);
  const user = asked ? null : await findUserByAccountId(ctx.db, viewerId);
  const language = asked?.code ?? user?.default_language ?? user?.locale ?? null;

  return searchStatusIds(ctx.db, {
    viewerId,
    language,
    words: parsed.words,
    phrases: parsed.phrases,
    excludedWords: parsed.excludedWords,
    excludedPhrases: parsed.excludedPhrases,
    scope: parsed.scope,
    filters,
    page: o.page,
    offset: o.offset,
  });
}

/** `from:` names: `me`, `user` (local), `user@domain`, with or without a leading `@`; null when not known here. */
async function authorId(ctx: AppContext, viewerId: string, name: string): Promise<string | null> {
  if (name.toLowerCase() === 'me') return viewerId;
  const [username, domain] = name.replace(/^@/, '').split('@') as [string, string | undefined];
  if (!username || !/^[a-z0-9_.-]{1,255}$/i.test(username)) return null;
  const local = !domain || domain.toLowerCase() === ctx.config.localDomain.toLowerCase();
  return (await findAccountByUsername(ctx.db, username, local ? null : domain))?.id ?? null;
}

/**
 * The id of a status named by its link: our own links name the id (`/@user/:id`, `/users/:user/statuses/:id`);
 * another server's are looked up among the statuses stored with their URL or URI. Null when none is known here.
 */
export async function statusIdOfLink(db: Queryable, publicUrl: string, link: string): Promise<string | null> {
  if (!/^https?:\/\//i.test(link)) return null;
  const ownId = link.startsWith(`${publicUrl}/`) ? /\/(?:@[^/]+|users\/[^/]+\/statuses)\/(\d{1,20})$/.exec(link)?.[1] : undefined;
  if (isId(ownId)) return ownId;
  return statusIdByLink(db, link);
}
