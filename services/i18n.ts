import { readdirSync, readFileSync } from 'node:fs';

/**
 * Words in other languages, for the pages (http/web/i18n.ts) and the mail (jobs/mail.ts): one flat JSON catalogue
 * per locale in a folder (English, `en.json`, is the source of the keys), read once. A message is a string with
 * `{name}` places, or, for a count, an object of plural forms chosen by `Intl.PluralRules` (`one`, `other`, ...). A
 * key a catalogue lacks is taken from English. Numbers and dates go through `Intl.NumberFormat` and
 * `Intl.DateTimeFormat`, made once per locale at first use.
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
  /** A moment as the pages and mails show it: the date and time in UTC, saying so. */
  date(iso: string | Date): string;
  /** A language's name in this locale (ISO 639 code), or `fallback` (its English name) where `Intl` has none. */
  languageName(code: string, fallback: string): string;
  /**
   * A list of languages (code, English name) with their names in this locale, sorted by them after the first `keep`
   * (which stay first, in their order): made once per list and locale.
   */
  languageList(list: readonly (readonly [string, string])[], keep?: number): [string, string][];
  /** `Text` in this locale. */
  text(text: Text): string;
}

export const SOURCE_LOCALE = 'en';

function loadCatalogues(dir: URL): Map<string, Catalogue> {
  const found = new Map<string, Catalogue>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    found.set(file.slice(0, -'.json'.length), JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as Catalogue);
  }
  if (!found.has(SOURCE_LOCALE)) throw new Error(`${dir.pathname}${SOURCE_LOCALE}.json is missing`);
  return found;
}

const PLACE = /\{(\w+)\}/g;

function makeTranslator(catalogues: Map<string, Catalogue>, locale: string): Translate {
  const own = catalogues.get(locale) ?? {};
  const source = catalogues.get(SOURCE_LOCALE)!;
  let plurals: Intl.PluralRules | undefined;
  let numbers: Intl.NumberFormat | undefined;
  let dates: Intl.DateTimeFormat | undefined;
  let languages: Intl.DisplayNames | undefined;
  // Each language's name, once found: the compose form names every language on each page.
  const languageNames = new Map<string, string>();
  const languageLists = new WeakMap<readonly (readonly [string, string])[], [string, string][]>();
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
        const known = languageNames.get(code);
        if (known !== undefined) return known;
        let name = fallback;
        try {
          languages ??= new Intl.DisplayNames([locale], { type: 'language', fallback: 'none' });
          const found = languages.of(code);
          if (found) name = found.charAt(0).toLocaleUpperCase(locale) + found.slice(1);
        } catch {
          // Not a code Intl takes: the English name stays.
        }
        if (languageNames.size < 1000) languageNames.set(code, name);
        return name;
      },
    },
    languageList: {
      value: (list: readonly (readonly [string, string])[], keep = 0) => {
        let made = languageLists.get(list);
        if (!made) {
          const named = list.map(([code, english]): [string, string] => [code, t.languageName(code, english)]);
          const collator = new Intl.Collator(locale);
          made = [...named.slice(0, keep), ...named.slice(keep).sort((a, b) => collator.compare(a[1], b[1]))];
          languageLists.set(list, made);
        }
        return made;
      },
    },
    text: { value: (text: Text) => (typeof text === 'string' ? text : t(text.key, text.params)) },
  });
  return t;
}

/** The catalogues of one folder: the locales they speak (English first), and a translator for each, kept for good. */
export interface Catalogues {
  readonly locales: readonly string[];
  /** A locale's own catalogue (without English filled in), for the catalogue checks. */
  catalogue(locale: string): Catalogue | undefined;
  /** The translator of a locale these catalogues speak (English for any other). */
  translator(locale: string): Translate;
  /** The locale these catalogues speak for a language tag (`de`, `de-AT`, `de_CH` → `de`), or null. */
  matchLocale(tag: string | null | undefined): string | null;
}

export function loadCatalogueFolder(dir: URL): Catalogues {
  const catalogues = loadCatalogues(dir);
  const locales = [SOURCE_LOCALE, ...[...catalogues.keys()].filter((l) => l !== SOURCE_LOCALE)];
  // One translator per locale for the life of the process: a page or a mail costs a map lookup.
  const translators = new Map(locales.map((l) => [l, makeTranslator(catalogues, l)]));
  return {
    locales,
    catalogue: (locale) => catalogues.get(locale),
    translator: (locale) => translators.get(locale) ?? translators.get(SOURCE_LOCALE)!,
    matchLocale: (tag) => {
      if (!tag) return null;
      const lower = tag.trim().toLowerCase().replace('_', '-');
      if (translators.has(lower)) return lower;
      const base = lower.split('-')[0]!;
      return translators.has(base) ? base : null;
    },
  };
}
