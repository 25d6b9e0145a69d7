import { ApiError } from '../../errors.ts';
import { catalogue, SOURCE_LOCALE, type Translate } from './i18n.ts';

/**
 * What a refusal of the services says on a page, in the page's language. The services refuse in Mastodon's words, as
 * the API answers them (`{"error": "Validation failed: Title can't be blank"}`); the catalogues hold each such message
 * under an `error.` key whose English text is the service's own words (without `Validation failed: `), with `{places}`
 * for what varies, so a message is found by its English text and said in the page's language. A message no catalogue
 * knows is shown as the service wrote it.
 */
interface Pattern {
  key: string;
  exact: string | null;
  match: RegExp | null;
  names: string[];
}

let patterns: Pattern[] | undefined;

function compile(): Pattern[] {
  const en = catalogue(SOURCE_LOCALE)!;
  const out: Pattern[] = [];
  for (const [key, message] of Object.entries(en)) {
    if (!key.startsWith('error.') || typeof message !== 'string') continue;
    const names = [...message.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    if (names.length === 0) {
      out.push({ key, exact: message, match: null, names });
      continue;
    }
    const source = message.split(/\{\w+\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('(.+?)');
    out.push({ key, exact: null, match: new RegExp(`^${source}$`, 's'), names });
  }
  return out;
}

const PREFIX = /^Validation failed: /;

/** A service's message in the page's language (without Mastodon's `Validation failed: `), or as it is. */
export function serviceMessage(t: Translate, message: string): string {
  const text = message.replace(PREFIX, '');
  patterns ??= compile();
  for (const p of patterns) {
    if (p.exact !== null) {
      if (p.exact === text) return t(p.key);
      continue;
    }
    const m = p.match!.exec(text);
    if (m) return t(p.key, Object.fromEntries(p.names.map((name, i) => [name, m[i + 1]!])));
  }
  return text;
}

/** A refusal shown as a form's error: the service's message in the page's language, ending as a sentence does. */
export function formError(t: Translate, err: ApiError | string): string {
  const text = serviceMessage(t, typeof err === 'string' ? err : err.message);
  return /[.!?…]$/.test(text) ? text : `${text}.`;
}
