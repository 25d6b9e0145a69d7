// The public pages in a real browser (Debian's Chromium through playwright-core): axe finds no serious or critical
// violation on any of them, in the light and the dark colour scheme, and no page runs a script or breaks its CSP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { multipart } from '../helpers/multipart.ts';
import { eventually } from '../helpers/eventually.ts';
import { artifactsDir, expectAccessible, screenshot, testBrowser, type TestBrowser } from '../helpers/browser.ts';

let s: TestServer & { url: string };
let browser: TestBrowser;
let alice: TestUser;
const paths: string[] = [];
let shots: string;

beforeAll(async () => {
  shots = await artifactsDir('public-a11y');
  s = await startListeningServer({ INSTANCE_TITLE: 'Accessible place' });
  const client = await createApp(s.app);
  alice = await registerUser(s.app, client, 'alice');
  await s.app.inject({
    method: 'PATCH', url: '/api/v1/accounts/update_credentials', headers: bearer(alice.token),
    payload: { display_name: 'Alice', note: 'Hello, I read books.', fields_attributes: [{ name: 'Site', value: 'https://alice.example' }] },
  });
  const png = await sharp({ create: { width: 80, height: 60, channels: 3, background: '#36c' } }).png().toBuffer();
  const form = await multipart({ file: { data: png, filename: 'blue.png', type: 'image/png' }, description: 'A blue rectangle' });
  const media = (await s.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(alice.token), ...form.headers }, payload: form.payload })).json();
  await eventually(async () => (await s.app.inject({ method: 'GET', url: `/api/v1/media/${media.id}`, headers: bearer(alice.token) })).statusCode, 200, 10_000);
  const post = async (payload: object) => (await s.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(alice.token), payload })).json();
  const first = await post({ status: 'A post with a picture #books', media_ids: [media.id] });
  await post({ status: 'Which one?', poll: { options: ['This', 'That'], expires_in: 3600 } });
  await post({ status: 'Behind a warning', spoiler_text: 'Plot details' });
  await post({ status: 'And a reply', in_reply_to_id: first.id });
  // A quote: the quoted post (its picture summed up) shown inside the quoting one.
  await post({ status: 'Quoting the picture', quoted_status_id: first.id });
  paths.push('/', '/about', '/privacy-policy', '/terms-of-service', '/about/api', '/@alice', '/@alice/media', '/@alice/with_replies', `/@alice/${first.id}`, '/tags/books', '/@nobody', '/no/such/page');
  browser = await testBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await s?.close();
});

describe('public pages in a browser', () => {
  // Every page in the light scheme; the dark one changes only colours, so a few pages with every kind of content.
  for (const scheme of ['light', 'dark'] as const) {
    it(`pass axe in the ${scheme} colour scheme, without scripts or CSP violations`, async () => {
      const context = await browser.newContext({ colorScheme: scheme, javaScriptEnabled: true });
      try {
        for (const path of scheme === 'light' ? paths : paths.filter((p) => p === '/about' || p.startsWith('/@alice/') || p === '/tags/books')) {
          const page = await context.newPage();
          const problems: string[] = [];
          page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
          const res = await page.goto(`${s.url}${path}`);
          expect(res?.headers()['content-type'], path).toMatch(/^text\/html/);
          expect(await page.locator('script').count(), path).toBe(0);
          expect(await page.locator('h1').count(), path).toBe(1);
          await expectAccessible(page, `${path} (${scheme})`);
          // Refused styles or images would show here as CSP errors; remote avatars are not fetched on a closed network.
          expect(problems.filter((p) => /Content Security Policy/.test(p)), path).toEqual([]);
          await screenshot(page, shots, `${scheme}${path}`);
          await page.close();
        }
      } finally {
        await context.close();
      }
    }, 120_000);
  }
});
