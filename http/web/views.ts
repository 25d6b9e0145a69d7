import { Eta } from 'eta';
import { fileURLToPath } from 'node:url';
import { SOURCE_LOCALE, translator } from './i18n.ts';

/**
 * The web pages' template engine. Eta escapes every `<%= %>` value by default; `<%~ %>` (raw) is used only for
 * HTML that was sanitised when it was made (status content, bios) or rendered by another template.
 */
const eta = new Eta({
  views: fileURLToPath(new URL('./templates', import.meta.url)),
  cache: true,
  autoEscape: true,
  autoTrim: false,
});

// Eta resolves a template's name to its file at every render and every include (a JSON key, path joins, a check that
// the file is inside the views): the same answer each time, since the names are the templates' own. Kept once found.
const resolvePath = eta.resolvePath!;
const resolved = new Map<string, string>();
eta.resolvePath = function resolveOnce(template, options) {
  const key = `${options?.filepath ?? ''}\0${template}`;
  let path = resolved.get(key);
  if (path === undefined) {
    path = resolvePath.call(this, template, options);
    if (resolved.size < 10_000) resolved.set(key, path);
  }
  return path;
};

/** A value escaped exactly as `<%= %>` escapes it in the templates. */
export function escapeForTemplates(value: string): string {
  return eta.config.escapeFunction(value);
}

/** What the layout shows on every page: the instance's name, who is signed in, the form token. */
export interface PageChrome {
  title: string;
  instanceTitle: string;
  /** The signed-in person's handle, or null for a stranger. */
  signedInAs: { username: string; admin: boolean } | null;
  /** CSRF token for the page's forms; '' where the page has none (public pages, which are cached). */
  csrfToken: string;
  /** Extra `<head>` lines, already rendered by a template (OpenGraph, alternate links, robots). */
  head?: string;
  /** Where sign-up stands: the layout links to it only when it is open. */
  registrationsOpen: boolean;
  /** The page's language: the locale its words are in (http/web/i18n.ts, `pageLocale`). */
  lang: string;
  /** Classes on <html> from the signed-in person's Appearance settings (theme, less motion, larger text); '' otherwise. */
  htmlClass?: string;
  /** A signed-in page: it loads the script that lets its forms act without a reload. */
  enhance?: boolean;
}

/**
 * Renders a page template (`templates/<name>.eta`) with its data and the chrome the layout needs, and `t`, the
 * translator of the page's language (included templates see it too). The operators' pages stay in English.
 */
export function renderView(name: string, data: Record<string, unknown> & { chrome: PageChrome }): string {
  if (name.startsWith('admin/') && data.chrome.lang !== SOURCE_LOCALE) data = { ...data, chrome: { ...data.chrome, lang: SOURCE_LOCALE } };
  return eta.render(`./${name}`, { ...data, t: translator(data.chrome.lang) });
}

/** Renders a part of a page (`templates/<name>.eta`, no layout): what the signed-in pages' script puts in place. */
export function renderFragment(name: string, data: Record<string, unknown>, locale: string = SOURCE_LOCALE): string {
  return eta.render(`./${name}`, { ...data, t: translator(locale) });
}
