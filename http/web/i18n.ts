import { readdirSync, readFileSync } from 'node:fs';
import type { FastifyRequest } from 'fastify';

/**
 * The pages' words in other languages: one flat JSON catalogue per locale in `locales/` (English, `en.json`, is the
 * source of the keys), read once when this module loads. A message is a string with `{name}` places, or, for a
 * count, an object of plural forms chosen by `Intl.PluralRules` (`one`, `other`, ...). A key a catalogue lacks is
 * taken from English. Numbers and dates go through `Intl.NumberFormat` and `Intl.DateTimeFormat`, made once per
 * locale at first use.
 */
export type Message = string | Partial<Record<Intl.LDMLPluralRule, string>> & { other: string };
export type Catalogue = Record<string, Message>;
export type Params = Record<string, string | number>;

/**
 * Words a handler gives a page (a title, a notice, a link's text): a message of the catalogue by key, translated when
 * the page is rendered in its language, or a string that needs no translation (a name, words already translated).
 */
export type Text = string | { key: string; params?: Params };

/** `t(key, params)` as the templates call it, with the locale's number and date formats. */
export interface Translate {
  (key: string, params?: Params): string;
  readonly locale: string;
  /** Whether the key is a message (of this locale or English). */
  has(key: string): boolean;
  number(n: number): string;
  /** A moment as the pages show it: the date and time in UTC, saying so. */
  date(iso: string | Date): string;
  /** A language's name in this locale (ISO 639 code), or `fallback` (its English name) where `Intl` has none. */
  languageName(code: string, fallback: string): string;
  /** `Text` in this locale. */
  text(text: Text): string;
}

export const SOURCE_LOCALE = 'en';
const DIR = new URL('./locales/', import.meta.url);

function loadCatalogues(): Map<string, Catalogue> {
  const found = new Map<string, Catalogue>();
  for (const file of readdirSync(DIR).filter((f) => f.endsWith('.json')).sort()) {
    found.set(file.slice(0, -'.json'.length), JSON.parse(readFileSync(new URL(file, DIR), 'utf8')) as Catalogue);
  }
  if (!found.has(SOURCE_LOCALE)) throw new Error(`http/web/locales/${SOURCE_LOCALE}.json is missing`);
  return found;
}

const catalogues = loadCatalogues();

/** The locales the pages speak, English first. */
export const LOCALES: readonly string[] = [SOURCE_LOCALE, ...[...catalogues.keys()].filter((l) => l !== SOURCE_LOCALE)];

/** A locale's own catalogue (without English filled in), for the catalogue checks. */
export function catalogue(locale: string): Catalogue | undefined {
  return catalogues.get(locale);
}

const PLACE = /\{(\w+)\}/g;

function makeTranslator(locale: string): Translate {
  const own = catalogues.get(locale) ?? {};
  const source = catalogues.get(SOURCE_LOCALE)!;
  let plurals: Intl.PluralRules | undefined;
  let numbers: Intl.NumberFormat | undefined;
  let dates: Intl.DateTimeFormat | undefined;
  let languages: Intl.DisplayNames | undefined;
  const number = (n: number) => (numbers ??= new Intl.NumberFormat(locale)).format(n);
  const t = ((key: string, params?: Params): string => {
    const message = own[key] ?? source[key] ?? key;
    let text: string;
    if (typeof message === 'string') text = message;
    else {
      const count = Number(params?.count ?? 0);
      text = message[(plurals ??= new Intl.PluralRules(locale)).select(count)] ?? message.other;
    }
    if (!params) return text;
    return text.replace(PLACE, (whole, name: string) => {
      const value = params[name];
      return value === undefined ? whole : typeof value === 'number' ? number(value) : value;
    });
  }) as Translate;
  Object.defineProperties(t, {
    locale: { value: locale },
    has: { value: (key: string) => key in own || key in source },
    number: { value: number },
    date: {
      value: (iso: string | Date) => {
        dates ??= new Intl.DateTimeFormat(locale === SOURCE_LOCALE ? 'en-GB' : locale, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });
        return `${dates.format(typeof iso === 'string' ? new Date(iso) : iso)} UTC`;
      },
    },
    languageName: {
      value: (code: string, fallback: string) => {
        if (locale === SOURCE_LOCALE) return fallback;
        try {
          languages ??= new Intl.DisplayNames([locale], { type: 'language', fallback: 'none' });
          const name = languages.of(code);
          return name ? name.charAt(0).toLocaleUpperCase(locale) + name.slice(1) : fallback;
        } catch {
          return fallback;
        }
      },
    },
    text: { value: (text: Text) => (typeof text === 'string' ? text : t(text.key, text.params)) },
  });
  return t;
}

// One translator per locale for the life of the process: a page costs a map lookup.
const translators = new Map(LOCALES.map((l) => [l, makeTranslator(l)]));

/** The translator of a locale the pages speak (English for any other). */
export function translator(locale: string): Translate {
  return translators.get(locale) ?? translators.get(SOURCE_LOCALE)!;
}

/** The locale the pages speak for a language tag (`de`, `de-AT`, `de_CH` → `de`), or null. */
export function matchLocale(tag: string | null | undefined): string | null {
  if (!tag) return null;
  const lower = tag.trim().toLowerCase().replace('_', '-');
  if (translators.has(lower)) return lower;
  const base = lower.split('-')[0]!;
  return translators.has(base) ? base : null;
}

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
