// The operators' pages of username blocks, trends and job queues in Chromium (Debian's, through playwright-core):
// each passes axe with no serious or critical violation in both colour schemes, and its forms work with scripts off
// (POST, then a redirect to the page with its notice). One browser for the file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { expectAccessible, testBrowser, type TestBrowser } from '../helpers/browser.ts';
import { signedInContext } from '../helpers/browser-session.ts';
import { eventually } from '../helpers/eventually.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { attachCard, upsertCard } from '../../storage/preview-cards.ts';
import { refreshTrends } from '../../services/trends.ts';
import { createUsernameBlock } from '../../services/username-blocks.ts';

let s: TestServer & { url: string };
let browser: TestBrowser;
let owner: TestUser;
let blockId: string;
let failedJobId: string;

beforeAll(async () => {
  s = await startListeningServer();
  const client = await createApp(s.app);
  const people = await Promise.all(['opsowner', 'opsa', 'opsb', 'opsc', 'opsd', 'opse'].map((u) => registerUser(s.app, client, u)));
  owner = people[0]!;
  await runCli(['accounts', 'role', 'opsowner', 'Owner'], s.ctx.db, () => {}, (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), { redis: s.ctx.redis, redisPrefix: s.config.redisPrefix });
  blockId = (await createUsernameBlock(s.ctx.db, { username: 'moderator', comparison: 'contains', allow_with_approval: true })).id;
  // A link, a hashtag and a post that trend, so that each table of the trends page has a row.
  const url = 'https://daily.example/news';
  const { card } = await upsertCard(s.ctx.db, {
    url, title: 'Daily news', description: '', type: 'link', author_name: '', author_url: '', provider_name: 'Daily', provider_url: '',
    html: '', embed_url: '', width: 0, height: 0, image_remote_url: null, image_key: null, blurhash: null, published_at: null,
  });
  const sharers = people.slice(1);
  for (const u of sharers) {
    const st = (await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(u.token), payload: { status: `news #opsnews from ${u.username}`, visibility: 'public' } })).json();
    await attachCard(s.ctx.db, st.id, String(card.id), url, false);
  }
  const popular = (await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(owner.token), payload: { status: 'Read this.', visibility: 'public' } })).json().id;
  for (const u of sharers.slice(0, 3)) await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${popular}/favourite`, headers: bearer(u.token) });
  for (const u of sharers.slice(3)) await s.app.inject({ method: 'POST', url: `/api/v1/statuses/${popular}/reblog`, headers: bearer(u.token) });
  await refreshTrends(s.ctx);
  // A job that fails for good (its media id is no number).
  failedJobId = (await s.ctx.jobs.media.add('transcodeMedia', { kind: 'transcodeMedia', outboxId: '0', mediaId: 'not-a-number' }, { attempts: 1, removeOnFail: 1000 })).id!;
  expect(await eventually(async () => (await s.ctx.jobs.media.getJob(failedJobId))?.getState(), 'failed', 15_000)).toBe('failed');
  browser = await testBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe('operators\' pages of username blocks, trends and job queues in a browser', () => {
  it('pass axe in both colour schemes', async () => {
    const { context, page } = await signedInContext(browser, s.url, owner, true);
    try {
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme });
        for (const path of ['/admin/username_blocks', `/admin/username_blocks/${blockId}/edit`, '/admin/trends', '/admin/jobs']) {
          const res = await page.goto(`${s.url}${path}`);
          expect(res?.status(), path).toBe(200);
          expect(await page.locator('table, form').count(), path).toBeGreaterThan(0);
          await expectAccessible(page, `${path} (${scheme})`);
        }
      }
    } finally {
      await context.close();
    }
  }, 180_000);

  it('work with scripts off: a block added, a hashtag rejected, a failed job removed', async () => {
    const { context, page } = await signedInContext(browser, s.url, owner, false);
    try {
      await page.goto(`${s.url}/admin/username_blocks`);
      await page.fill('#new-username', 'official');
      await page.selectOption('#new-comparison', 'equals');
      await Promise.all([page.waitForURL(/notice=added/), page.click('form[action="/admin/username_blocks"] button[type=submit]')]);
      expect(await page.locator('[role=status]').textContent()).toContain('The username block is added.');
      expect(await page.locator('td', { hasText: 'official' }).count()).toBe(1);

      await page.goto(`${s.url}/admin/trends`);
      await Promise.all([page.waitForURL(/notice=rejected/), page.click('button[aria-label="Reject #opsnews"]')]);
      expect(await page.locator('[role=status]').textContent()).toContain('Rejected: it no longer trends.');
      expect(await page.locator('#tags tr', { hasText: '#opsnews' }).locator('td').nth(2).textContent()).toBe('rejected');

      await page.goto(`${s.url}/admin/jobs`);
      await Promise.all([page.waitForURL(/notice=removed/), page.click(`button[aria-label="Remove transcodeMedia ${failedJobId}"]`)]);
      expect(await page.locator('[role=status]').textContent()).toContain('The job is removed.');
      expect(await page.locator('body').textContent()).toContain('No job has failed.');
    } finally {
      await context.close();
    }
  }, 120_000);
});
