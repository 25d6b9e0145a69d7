import Bowser from 'bowser';
import type { Translate } from './i18n.ts';

/** A browser's User-Agent in words, as a person knows it: "Firefox on Android", "Safari on iOS"; a fallback otherwise. */
export function browserInWords(userAgent: string | null, t: Translate): string {
  if (!userAgent?.trim()) return t('browser.unknown');
  const { browser, os } = Bowser.parse(userAgent);
  const name = browser.name || '';
  const system = os.name || '';
  if (name && system) return t('browser.on', { name, system });
  if (name || system) return name || t('browser.some_on', { system });
  // An app or a tool: the first word of what it calls itself ("curl/8.5" becomes "curl").
  return /^[\w.-]{1,40}/.exec(userAgent.trim())?.[0] ?? t('browser.unknown');
}
