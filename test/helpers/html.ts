import { expect } from 'vitest';
import { HtmlValidate } from 'html-validate';

const html = new HtmlValidate({
  extends: ['html-validate:recommended'],
  rules: {
    // Inline styles are what the pages' CSP (style-src 'self') refuses: none may appear.
    'no-inline-style': 'error',
    // Titles are cut at 70 characters (http/web/page-chrome.ts); the rule counts `&lt;` and `&quot;` in the source as
    // four and six, so a post title quoting its author's words with such characters goes past its count.
    'long-title': 'off',
  },
});

/** Fails with every message html-validate has about the page. */
export async function expectValidHtml(body: string, what: string): Promise<void> {
  const report = await html.validateString(body);
  const messages = report.results.flatMap((r) => r.messages.map((m) => `${m.ruleId}: ${m.message} (line ${m.line})`));
  expect(messages, `${what}\n${messages.join('\n')}`).toEqual([]);
}
