import type { BrowserContext, Page } from 'playwright-core';
import type { TestBrowser } from './browser.ts';

/**
 * A browser context signed in as this person through the sign-in form. `javaScriptEnabled: false` proves a page's
 * forms work without scripts; axe needs scripts on (it runs in the page).
 */
export async function signedInContext(browser: TestBrowser, origin: string, user: { email: string; password: string }, javaScriptEnabled: boolean): Promise<{ context: BrowserContext; page: Page }> {
  // A test server over https uses the tests' own certificate authority, which Chromium does not know.
  const context = await browser.newContext({ javaScriptEnabled, ignoreHTTPSErrors: origin.startsWith('https:') });
  const page = await context.newPage();
  await page.goto(`${origin}/auth/sign_in`);
  await page.fill('#email', user.email);
  await page.fill('#password', user.password);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith('/auth/')), page.click('form[action="/auth/sign_in"] button[type=submit]')]);
  return { context, page };
}
