// The operators' console in a real browser (Debian's Chromium through playwright-core): every page passes axe with no
// serious or critical violation, and its forms work with scripts off (POST, then a redirect to the page).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { expectAccessible, testBrowser, type TestBrowser } from '../helpers/browser.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';

let s: TestServer & { url: string };
let browser: TestBrowser;
let boss: TestUser;
let target: TestUser;
let reportId: string;

async function signIn(context: BrowserContext, u: TestUser): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${s.url}/auth/sign_in`);
  await page.fill('#email', u.email);
  await page.fill('#password', u.password);
  await Promise.all([page.waitForURL((url) => !url.pathname.startsWith('/auth/sign_in')), page.locator('form:has(#email) button[type=submit]').click()]);
  return page;
}

beforeAll(async () => {
  s = await startListeningServer({ INSTANCE_TITLE: 'Console place' });
  const client = await createApp(s.app, 'read write follow push admin:read admin:write');
  [boss, target] = await Promise.all(['boss', 'target'].map((u) => registerUser(s.app, client, u, 'read write admin:read admin:write'))) as [TestUser, TestUser];
  await runCli(['accounts', 'role', 'boss', 'Admin'], s.ctx.db, () => {}, (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  reportId = (await s.app.inject({ method: 'POST', url: '/api/v1/reports', headers: bearer(target.token), payload: { account_id: boss.id, comment: 'test' } })).json().id;
  await s.app.inject({ method: 'POST', url: '/api/v1/admin/domain_blocks', headers: bearer(boss.token), payload: { domain: 'blocked.example', severity: 'suspend', public_comment: 'spam' } });
  await s.app.inject({ method: 'POST', url: '/api/v1/admin/ip_blocks', headers: bearer(boss.token), payload: { ip: '192.0.2.0/24', severity: 'no_access' } });
  await s.app.inject({ method: 'POST', url: '/api/v1/admin/email_domain_blocks', headers: bearer(boss.token), payload: { domain: 'spam.example' } });
  await s.app.inject({ method: 'POST', url: '/api/v1/admin/domain_allows', headers: bearer(boss.token), payload: { domain: 'friend.example' } });
  browser = await testBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe('operators\' console in a browser', () => {
  it('pages pass axe in both colour schemes', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      const context = await browser.newContext({ colorScheme: scheme });
      try {
        const page = await signIn(context, boss);
        const paths = ['/admin/accounts', `/admin/accounts/${target.id}`, '/admin/action_logs', '/admin/dashboard', '/admin/domain_blocks', '/admin/domain_allows', '/admin/ip_blocks', '/admin/email_domain_blocks', `/admin/reports/${reportId}`];
        for (const path of scheme === 'light' ? paths : paths.slice(0, 4)) {
          const res = await page.goto(`${s.url}${path}`);
          expect(res?.status(), path).toBe(200);
          expect(await page.locator('h1').count(), path).toBe(1);
          await expectAccessible(page, `${path} (${scheme})`);
        }
        // The confirmation page of a CSV import of domain blocks (the answer to the file's POST).
        await page.goto(`${s.url}/admin/domain_blocks`);
        await page.setInputFiles('#blocks-file', { name: 'blocks.csv', mimeType: 'text/csv', buffer: Buffer.from('#domain,#severity\nlisted.example,silence\nblocked.example,silence\nsub.blocked.example,noop\n') });
        await Promise.all([page.waitForURL(/\/admin\/domain_blocks\/import$/), page.click('form[action="/admin/domain_blocks/import"] button[type=submit]')]);
        expect(await page.locator('h1').textContent()).toBe('Confirm the import of domain blocks');
        await expectAccessible(page, `domain block import confirmation (${scheme})`);
      } finally {
        await context.close();
      }
    }
  }, 180_000);

  it('forms work with scripts off: a note, an action, a domain block, each answered by a redirect to the page, and a CSV import confirmed', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    try {
      const page = await signIn(context, boss);
      await page.goto(`${s.url}/admin/accounts/${target.id}`);
      await page.fill('#note-content', 'Seen in a browser.');
      await Promise.all([page.waitForURL(/notice=note_added/), page.click('#notes button:has-text("Add note")')]);
      expect(await page.locator('#notes blockquote').first().textContent()).toBe('Seen in a browser.');
      await page.check('#action-silence');
      await page.fill('#action-text', 'Calm down.');
      await Promise.all([page.waitForURL(/notice=acted/), page.click('form[action$="/action"] button[type=submit]')]);
      expect(await page.locator('p.flash.notice').textContent()).toContain('action is taken');
      await page.goto(`${s.url}/admin/domain_blocks`);
      await page.fill('#block-domain', 'browser.example');
      await page.selectOption('#block-severity', 'silence');
      await Promise.all([page.waitForURL(/notice=blocked/), page.click('form[action="/admin/domain_blocks"] button[type=submit]')]);
      expect(await page.locator('td', { hasText: 'browser.example' }).count()).toBe(1);
      // A CSV import: the confirmation page lists the file's blocks; one unticked, one already here.
      await page.setInputFiles('#blocks-file', { name: 'blocks.csv', mimeType: 'text/csv', buffer: Buffer.from('#domain,#severity\nlisted.example,silence\nblocked.example,silence\nother.example,suspend\n') });
      await Promise.all([page.waitForURL(/\/admin\/domain_blocks\/import$/), page.click('form[action="/admin/domain_blocks/import"] button[type=submit]')]);
      expect(await page.locator('h1').textContent()).toBe('Confirm the import of domain blocks');
      expect(await page.isChecked('input[aria-label="Apply the block of listed.example"]')).toBe(true);
      expect(await page.isChecked('input[aria-label="Apply the block of blocked.example"]')).toBe(false);
      await page.uncheck('input[aria-label="Apply the block of other.example"]');
      await Promise.all([page.waitForURL(/\/import\/confirm$/), page.click('form[action="/admin/domain_blocks/import/confirm"] button[type=submit]')]);
      expect(await page.locator('p.flash.notice').textContent()).toContain('Imported: 1 added, 0 changed, 0 already blocked or left as they were, 0 skipped.');
      expect(await page.locator('td', { hasText: 'listed.example' }).count()).toBe(1);
      expect(await page.locator('td', { hasText: 'other.example' }).count()).toBe(0);
      await page.goto(`${s.url}/admin/action_logs`);
      await page.selectOption('#log-action', 'silence');
      await Promise.all([page.waitForURL(/action_type=silence/), page.click('form[action="/admin/action_logs"] button[type=submit]')]);
      expect(await page.locator('tbody tr').count()).toBe(1);
      expect(await page.locator('tbody tr td').nth(1).textContent()).toBe('@boss');
    } finally {
      await context.close();
    }
  }, 120_000);
});
