// The pages' message catalogues (http/web/locales/*.json): every key a template or page module asks for is in
// English, the source; no other locale has keys or places English lacks; plural forms are the locale's own. Keys a
// locale lacks are listed (they fall back to English), so a translator sees what is left to do.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOCALES, SOURCE_LOCALE, catalogue, matchLocale, negotiate, translator, type Message } from '../../http/web/i18n.ts';

const WEB = new URL('../../http/web/', import.meta.url).pathname;

function filesUnder(dir: string, ext: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? filesUnder(join(dir, d.name), ext) : d.name.endsWith(ext) ? [join(dir, d.name)] : []);
}

/** Keys named literally: `t('key'` in templates and page modules, and the quoted keys templates pick among. */
function keysUsed(): Map<string, string> {
  const used = new Map<string, string>();
  const add = (key: string, file: string) => used.set(key, file.slice(WEB.length));
  for (const file of filesUnder(`${WEB}templates`, '.eta')) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\bt\(\s*'([a-z0-9_.]+)'/g)) add(m[1]!, file);
    // it.t(cond ? 'a.b' : 'c.d') and lists of ['/path', 'key'] given to it.t
    for (const m of text.matchAll(/\bt\(([^()`]*\?[^()`]*)\)/g)) for (const k of m[1]!.matchAll(/'([a-z0-9_]+\.[a-z0-9_.]+)'/g)) add(k[1]!, file);
    for (const m of text.matchAll(/\['[^']*', '([a-z_]+\.[a-z0-9_.]+)'\]/g)) add(m[1]!, file);
  }
  for (const file of filesUnder(WEB, '.ts')) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\bt\((?:[a-z.]+ \? )?'([a-z0-9_]+\.[a-z0-9_.]+)'(?: : '([a-z0-9_]+\.[a-z0-9_.]+)')?/g)) {
      add(m[1]!, file);
      if (m[2]) add(m[2], file);
    }
    for (const m of text.matchAll(/\['[a-z]+', '(appearance\.[a-z0-9_.]+)'\]/g)) add(m[1]!, file);
  }
  return used;
}

const places = (m: Message) => new Set((typeof m === 'string' ? [m] : Object.values(m)).flatMap((s) => [...(s ?? '').matchAll(/\{(\w+)\}/g)].map((x) => x[1]!)));
const en = catalogue(SOURCE_LOCALE)!;

describe('the message catalogues', () => {
  it('English has every key the templates and pages ask for', () => {
    const used = keysUsed();
    expect(used.size).toBeGreaterThan(100);
    const unknown = [...used].filter(([key]) => !(key in en)).map(([key, file]) => `${key} (${file})`);
    expect(unknown).toEqual([]);
  });

  it('lists the keys each locale lacks (they are shown in English)', () => {
    const lacking: Record<string, string[]> = {};
    for (const locale of LOCALES.filter((l) => l !== SOURCE_LOCALE)) lacking[locale] = Object.keys(en).filter((k) => !(k in catalogue(locale)!));
    console.info(`Keys each locale lacks: ${JSON.stringify(lacking, null, 1)}`);
    // German covers every page a person uses daily: nothing left out.
    expect(lacking.de).toEqual([]);
  });

  it('no locale has keys, places or plural forms English and the locale do not know', () => {
    for (const locale of LOCALES) {
      const own = catalogue(locale)!;
      const forms = new Set(new Intl.PluralRules(locale).resolvedOptions().pluralCategories);
      for (const [key, message] of Object.entries(own)) {
        expect(key in en, `${locale}: ${key} is not an English key`).toBe(true);
        expect([...places(message)].filter((p) => !places(en[key]!).has(p)), `${locale}: ${key}`).toEqual([]);
        if (typeof message !== 'string') {
          expect(Object.keys(message).filter((f) => !forms.has(f as Intl.LDMLPluralRule)), `${locale}: ${key}`).toEqual([]);
          expect(typeof message.other, `${locale}: ${key}`).toBe('string');
        }
      }
    }
  });
});

describe('t()', () => {
  it('fills places, chooses plural forms by the locale, formats numbers, falls back to English', () => {
    const de = translator('de');
    expect(de('thread.title', { name: 'Ada' })).toBe('Beitrag von Ada');
    expect([de('status.replies', { count: 1 }), de('status.replies', { count: 1234 })]).toEqual(['1 Antwort', '1.234 Antworten']);
    expect([translator('en')('status.replies', { count: 0 }), translator('en')('status.replies', { count: 1 })]).toEqual(['0 replies', '1 reply']);
    expect(de.date('2026-12-05T14:03:00Z')).toBe('05.12.2026, 14:03 UTC');
    expect(translator('en').date('2026-12-05T14:03:00Z')).toBe('5 Dec 2026, 14:03 UTC');
    expect(translator('xx')('nav.home')).toBe('Home');
    expect(translator('xx').locale).toBe('en');
  });

  it('negotiates Accept-Language by quality, regions and scripts to the locales there are', () => {
    expect(negotiate('fr-CH, fr;q=0.9, de;q=0.8, en;q=0.7')).toBe('de');
    expect(negotiate('en;q=0.5, de-AT')).toBe('de');
    expect(negotiate('xx-YY, tlh')).toBe(null);
    expect(negotiate('*')).toBe(null);
    expect(negotiate('de;q=0')).toBe(null);
    expect(negotiate(undefined)).toBe(null);
    expect([matchLocale('de_CH'), matchLocale('DE'), matchLocale('fr'), matchLocale(null)]).toEqual(['de', 'de', null, null]);
  });
});
