import { createHash } from 'node:crypto';
import { Parser } from 'htmlparser2';
import { ApiError, forbidden, notFound } from '../../errors.ts';
import type { Config } from '../../config.ts';
import type { RedisClient } from '../../storage/redis.ts';
import type { Queryable } from '../../storage/db.ts';
import { pollOfStatus } from '../../storage/polls.ts';
import { mediaOfStatuses } from '../../storage/media.ts';
import { findUserByAccountId } from '../../storage/users.ts';
import { visibleStatus } from '../visibility.ts';
import { escapeHtml, sanitizeRemoteHtml } from '../../text/render.ts';
import { translationBackend, TranslationUnavailable, type TranslationBackend } from './backends.ts';

/**
 * Machine translation of a post, as Mastodon's TranslateStatusService: only public and unlisted posts, only between
 * languages the service offers, the post's text, content warning, poll options and media descriptions in one request,
 * and the result kept a day for everyone who asks for the same text in the same language.
 */
export interface StatusTranslation {
  content: string;
  spoilerText: string;
  poll: { id: string; options: string[] } | null;
  media: { id: string; description: string }[];
  detectedSourceLanguage: string;
  language: string;
  provider: string;
}

interface Deps {
  config: Config;
  db: Queryable;
  redis: RedisClient;
}

const CACHE_SECONDS = 24 * 3600;
/** The language pairs a service offers change rarely (Mastodon keeps them a week); a failure is asked again soon. */
const LANGUAGES_MS = 24 * 3600_000;

const backends = new WeakMap<Config, { backend: TranslationBackend; languages: { at: number; pairs: Promise<Record<string, string[]>> } | null }>();

function configured(config: Config) {
  if (!config.translation) return null;
  let entry = backends.get(config);
  if (!entry) backends.set(config, (entry = { backend: translationBackend(config.translation), languages: null }));
  return entry;
}

export const translationEnabled = (config: Config): boolean => config.translation !== null;

/** Source language -> target languages; `{}` when no service is configured. Answers 503 when the service fails. */
export async function translationLanguages(config: Config): Promise<Record<string, string[]>> {
  const entry = configured(config);
  if (!entry) return {};
  if (!entry.languages || Date.now() - entry.languages.at > LANGUAGES_MS) {
    const pairs = entry.backend.languages();
    const cached = { at: Date.now(), pairs };
    entry.languages = cached;
    pairs.catch(() => { if (entry.languages === cached) entry.languages = null; });
  }
  return entry.languages.pairs.catch((err: unknown) => { throw unavailable(err); });
}

/** Mastodon's answers when the service fails: all 503, with what clients can show. */
function unavailable(err: unknown): ApiError {
  if (!(err instanceof TranslationUnavailable)) throw err;
  if (err.failure === 'quota') return new ApiError(503, 'The translation service quota has been exceeded');
  if (err.failure === 'too_many_requests') return new ApiError(503, 'Too many requests to the translation service, try again later');
  return new ApiError(503, 'The translation service is unavailable, try again later');
}

/** Shortcodes kept out of translation (`translate="no"` is honoured by both services), in text outside tags. */
function keepShortcodes(html: string): string {
  return html.split(/(<[^>]*>)/).map((part) => (part.startsWith('<') ? part : part.replace(/:([a-zA-Z0-9_]{2,}):/g, '<span translate="no">:$1:</span>'))).join('');
}

/** The shortcodes as they were, without the markup that kept them untranslated. */
function unwrapShortcodes(html: string): string {
  return html.replace(/<span translate="no">(:[a-zA-Z0-9_]{2,}:)<\/span>/g, '$1');
}

/** Plain text (a content warning, a poll option, a description) back from the HTML it was translated as. */
function plainText(html: string): string {
  let text = '';
  const parser = new Parser({ ontext: (chunk) => { text += chunk; } }, { decodeEntities: true });
  parser.write(html);
  parser.end();
  return text;
}

/** The language a person's translations are made into when they do not name one: their interface language. */
export async function translationTarget(deps: Deps, viewerId: string): Promise<string> {
  const target = (await findUserByAccountId(deps.db, viewerId))?.locale ?? deps.config.instanceLanguages[0] ?? 'en';
  return target.replace('_', '-');
}

/**
 * Whether to offer a post's translation into `target` with these pairs of languages, as Mastodon's web client offers
 * it: public and unlisted posts, from the post's language (or "detect it") to the target, not into its own language.
 */
export function translatable(pairs: Record<string, string[]>, target: string, post: { visibility: string; language: string | null }): boolean {
  if (post.visibility !== 'public' && post.visibility !== 'unlisted') return false;
  if (post.language !== null && post.language === target) return false;
  return (pairs[post.language ?? 'und'] ?? []).includes(target);
}

/**
 * The post's texts in `target`. With `onlyKept`, the service is not asked: the translation made earlier (kept a
 * day), or null (the web pages show what a form asked for, and never call the service when only read).
 */
export async function translateStatus(deps: Deps, viewerId: string, statusId: string, target: string): Promise<StatusTranslation>;
export async function translateStatus(deps: Deps, viewerId: string, statusId: string, target: string, onlyKept: true): Promise<StatusTranslation | null>;
export async function translateStatus(deps: Deps, viewerId: string, statusId: string, target: string, onlyKept = false): Promise<StatusTranslation | null> {
  const status = await visibleStatus(deps.db, viewerId, statusId);
  if (status.visibility !== 'public' && status.visibility !== 'unlisted') throw forbidden();
  const entry = configured(deps.config);
  if (!entry) throw notFound();
  const source = status.language;
  const pairs = await translationLanguages(deps.config);
  if (!(pairs[source ?? 'und'] ?? []).includes(target)) throw forbidden();

  const [poll, media] = await Promise.all([pollOfStatus(deps.db, status.id), mediaOfStatuses(deps.db, [status.id])]);
  const described = (media.get(status.id) ?? []).filter((m) => m.description.trim() !== '');
  // One request for every text of the post, in this order; empty texts are not sent.
  const texts: { kind: 'content' | 'spoiler' | 'option' | 'media'; id?: string; html: string }[] = [];
  if (status.content.trim() !== '') texts.push({ kind: 'content', html: keepShortcodes(status.content) });
  if (status.spoiler_text !== '') texts.push({ kind: 'spoiler', html: keepShortcodes(escapeHtml(status.spoiler_text)) });
  for (const option of poll?.options ?? []) texts.push({ kind: 'option', html: keepShortcodes(escapeHtml(option)) });
  for (const m of described) texts.push({ kind: 'media', id: m.id, html: keepShortcodes(escapeHtml(m.description)) });

  const translated = texts.length === 0 ? [] : await cachedTranslation(deps, entry.backend, texts.map((t) => t.html), source, target, onlyKept);
  if (translated === null) return null;
  const result: StatusTranslation = {
    content: '', spoilerText: '', poll: poll ? { id: poll.id, options: [] } : null, media: [],
    detectedSourceLanguage: translated.find((t) => t.detectedSourceLanguage)?.detectedSourceLanguage ?? source ?? 'und',
    language: target,
    provider: entry.backend.provider,
  };
  texts.forEach((t, i) => {
    const text = unwrapShortcodes(translated[i]?.text ?? '');
    if (t.kind === 'content') result.content = sanitizeRemoteHtml(text);
    else if (t.kind === 'spoiler') result.spoilerText = plainText(text);
    else if (t.kind === 'option') result.poll?.options.push(plainText(text));
    else result.media.push({ id: t.id!, description: plainText(text) });
  });
  return result;
}

async function cachedTranslation(deps: Deps, backend: TranslationBackend, texts: string[], source: string | null, target: string, onlyKept: boolean) {
  const hash = createHash('sha256').update(JSON.stringify([backend.provider, source, target, texts])).digest('base64url');
  const key = `${deps.config.redisPrefix}translations:${hash}`;
  const cached = await deps.redis.get(key);
  if (cached) return JSON.parse(cached) as Awaited<ReturnType<TranslationBackend['translate']>>;
  if (onlyKept) return null;
  const translated = await backend.translate(texts, source, target).catch((err: unknown) => { throw unavailable(err); });
  await deps.redis.set(key, JSON.stringify(translated), 'EX', CACHE_SECONDS);
  return translated;
}
