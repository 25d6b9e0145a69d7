import Bowser from 'bowser';

/** A browser's User-Agent in words, as a person knows it: "Firefox on Android", "Safari on iOS"; a fallback otherwise. */
export function browserInWords(userAgent: string | null): string {
  if (!userAgent?.trim()) return 'Unknown browser';
  const { browser, os } = Bowser.parse(userAgent);
  const name = browser.name || '';
  const system = os.name || '';
  if (name && system) return `${name} on ${system}`;
  if (name || system) return name || `A browser on ${system}`;
  // An app or a tool: the first word of what it calls itself ("curl/8.5" becomes "curl").
  return /^[\w.-]{1,40}/.exec(userAgent.trim())?.[0] ?? 'Unknown browser';
}
