import type { FastifyRequest } from 'fastify';
import { loadCatalogueFolder, SOURCE_LOCALE, type Translate } from '../../services/i18n.ts';

/**
 * The pages' words in other languages: the catalogues in `locales/` (services/i18n.ts reads them), and the language
 * a page speaks (`pageLocale`).
 */
export { SOURCE_LOCALE } from '../../services/i18n.ts';
export type { Catalogue, Message, Params, Text, Translate } from '../../services/i18n.ts';

const pages = loadCatalogueFolder(new URL('./locales/', import.meta.url));

/** The locales the pages speak, English first. */
export const LOCALES: readonly string[] = pages.locales;

/** A locale's own catalogue (without English filled in), for the catalogue checks. */
export const catalogue = pages.catalogue;

/** The translator of a locale the pages speak (English for any other). */
export const translator: (locale: string) => Translate = pages.translator;

/** The locale the pages speak for a language tag (`de`, `de-AT`, `de_CH` → `de`), or null. */
export const matchLocale = pages.matchLocale;

/** The best locale the pages speak for an `Accept-Language` header (by its q-values, first listed first), or null. */
export function negotiate(acceptLanguage: string | undefined): string | null {
  if (!acceptLanguage) return null;
  const asked = acceptLanguage.slice(0, 500).split(',').slice(0, 20).map((part, i) => {
    const [tag, ...rest] = part.trim().split(';');
    const q = rest.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find(Boolean);
    return { tag: tag!.trim(), q: q === undefined ? 1 : Number(q), i };
  }).filter((a) => a.tag && a.tag !== '*' && a.q > 0).sort((a, b) => b.q - a.q || a.i - b.i);
  for (const a of asked) {
    const found = matchLocale(a.tag);
    if (found) return found;
  }
  return null;
}

/**
 * The language of a page: the signed-in person's interface language when the pages speak it; otherwise what the
 * browser asks for (`Accept-Language`), then the server's first language, then English.
 */
export function pageLocale(request: FastifyRequest, user: { locale: string | null } | null, instanceLanguages: readonly string[]): string {
  return matchLocale(user?.locale) ?? negotiate(request.headers['accept-language']) ?? matchLocale(instanceLanguages[0]) ?? SOURCE_LOCALE;
}
