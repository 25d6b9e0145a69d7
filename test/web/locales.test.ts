// The message catalogues of the pages (http/web/locales/*.json) and of the mail (jobs/mail-templates/locales/*.json):
// every key a template or page module asks for is in English, the source; no other locale has keys or places English
// lacks; plural forms are the locale's own; German lacks nothing. Every refusal the services word for a page has its
// message, so a page says it in its language (http/web/service-errors.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOCALES, SOURCE_LOCALE, catalogue, matchLocale, negotiate, translator, type Message } from '../../http/web/i18n.ts';
import { loadCatalogueFolder } from '../../services/i18n.ts';
import { serviceMessage } from '../../http/web/service-errors.ts';

const WEB = new URL('../../http/web/', import.meta.url).pathname;
const ROOT = new URL('../../', import.meta.url).pathname;
const MAIL = new URL('../../jobs/mail-templates/', import.meta.url).pathname;
const mail = loadCatalogueFolder(new URL('../../jobs/mail-templates/locales/', import.meta.url));

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
    // Choices given to a template as [value, message key], and words given as { key: 'x.y' } (a `Text`).
    for (const m of text.matchAll(/\[[^,[\]]+, '([a-z_]+\.[a-z0-9_.]+)'(?:, '([a-z_]+\.[a-z0-9_.]+)')?\]/g)) {
      add(m[1]!, file);
      if (m[2]) add(m[2], file);
    }
    for (const m of text.matchAll(/\bkey: '([a-z_]+\.[a-z0-9_.]+)'/g)) add(m[1]!, file);
    for (const m of text.matchAll(/: '([a-z_]+\.[a-z0-9_]+(?:\.[a-z0-9_]+)*)'(?=[,\s}])/g)) if (/^(?:notice|invites|keys|export|migration|development|lists|filters|policy|cleanup|strikes|unsubscribe|remote|done|common|confirmation|password|import|mail_settings|compose|duration|relationship)\./.test(m[1]!)) add(m[1]!, file);
  }
  return used;
}

/** Keys the mail templates ask for literally (`t('key'`, and keys chosen by a condition). */
function mailKeysUsed(): Map<string, string> {
  const used = new Map<string, string>();
  for (const file of filesUnder(MAIL, '.eta')) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\bt\(\s*'([a-z0-9_.]+)'/g)) used.set(m[1]!, file);
    for (const m of text.matchAll(/\bt\(([^()`]*\?[^()`]*)\)/g)) for (const k of m[1]!.matchAll(/'([a-z_]+\.[a-z0-9_.]+)'/g)) used.set(k[1]!, file);
  }
  const code = readFileSync(`${ROOT}jobs/mail.ts`, 'utf8');
  for (const m of code.matchAll(/\bt\((?:[^()]*\? )?'([a-z0-9_]+\.[a-z0-9_.]+)'(?: : '([a-z0-9_]+\.[a-z0-9_.]+)')?/g)) {
    used.set(m[1]!, 'jobs/mail.ts');
    if (m[2]) used.set(m[2], 'jobs/mail.ts');
  }
  return used;
}

/**
 * The refusals the services and the pages word (`unprocessable('…')`, `new ApiError(422, '…')`, a returned
 * `error: '…'`, …), each `${…}` made a sample value, with the files they are in: what a page may have to say.
 */
function serviceRefusals(): { message: string; file: string }[] {
  const found: { message: string; file: string }[] = [];
  const call = /(?:unprocessable|forbidden|new ApiError\(\s*4\d\d\s*,|new (?:RemoteInteractionError|ImportFormError|CleanupPolicyRefused)|refuse\(\s*\d+\s*,|error:|return|Failure\(|\? )\s*\(?\s*(`(?:[^`\\]|\\.)*`|'(?:[^'\\]|\\.)*')/g;
  // The operators' pages stay English: what only they show is left out.
  const operatorsOnly = ['server-settings', 'domain-blocks', 'domain-block-csv', 'moderation-notes', 'webhooks', 'rules', 'relays', 'admin-blocks', 'custom-emojis', 'role-management', 'trend-reviews', 'announcements', 'instance-policies'];
  const files = [
    ...filesUnder(`${ROOT}services`, '.ts').filter((f) => !operatorsOnly.some((name) => f.endsWith(`/services/${name}.ts`))),
    ...filesUnder(WEB, '.ts').filter((f) => !f.includes('/admin')),
  ];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(call)) {
      const raw = m[1]!.slice(1, -1).replace(/\\(['`])/g, '$1');
      // Only sentences a person reads: capitalised or Mastodon's `Validation failed: `, several words.
      const message = raw.replace(/\$\{[^}]*\}/g, '7');
      if (!/^(?:Validation failed: |[A-Z7])/.test(message) || message.split(' ').length < 3 || /^Validation failed: 7$/.test(message)) continue;
      found.push({ message, file: file.slice(ROOT.length) });
    }
  }
  return found;
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

  it('the mail templates ask only for keys English has, and German lacks none of them', () => {
    const en = mail.catalogue(SOURCE_LOCALE)!;
    const used = mailKeysUsed();
    expect(used.size).toBeGreaterThan(60);
    expect([...used].filter(([key]) => !(key in en)).map(([key, file]) => `${key} (${file})`)).toEqual([]);
    expect(mail.locales).toContain('de');
    expect(Object.keys(en).filter((k) => !(k in mail.catalogue('de')!))).toEqual([]);
  });

  it('every refusal the services and pages word for a person is said in German on a page', () => {
    const refusals = serviceRefusals();
    expect(refusals.length).toBeGreaterThan(100);
    const de = translator('de');
    // Messages only the API, a log or an operator's page shows (those pages stay English), and words the pages
    // already say in the page's language (built from the catalogue).
    const apiOnly = /^(?:This method requires|Only the json format|Sign in first|Validation failed: 7 is not one of|Mail is off)/;
    const untranslated = refusals.filter(({ message }) => !apiOnly.test(message) && serviceMessage(de, message) === message.replace(/^Validation failed: /, ''));
    expect(untranslated.map(({ message, file }) => `${message} (${file})`)).toEqual([]);
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
