import { createRequire } from 'node:module';
import type SanitizeHtml from 'sanitize-html';

export type SanitizeOptions = SanitizeHtml.IOptions;

// sanitize-html (with its own htmlparser2, postcss and source-map-js: ~80 modules) is required at its first use, not
// imported at start: a process at rest has no HTML to clean. `require` keeps the callers synchronous.
const require = createRequire(import.meta.url);
let sanitizeHtml: typeof SanitizeHtml | undefined;

/** sanitize-html's `sanitizeHtml(html, options)`, the package loaded on the first call. */
export function sanitize(html: string, options: SanitizeOptions): string {
  sanitizeHtml ??= require('sanitize-html') as typeof SanitizeHtml;
  return sanitizeHtml(html, options);
}
