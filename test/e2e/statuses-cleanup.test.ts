// Automated post deletion: the policy set on /statuses_cleanup in a real browser (without scripts), then the
// repeating job's run: each exception keeps its post, the rest are deleted as by hand, and a follower on a strict
// peer (test/helpers/strict-peer.ts) receives each Delete signed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { multipart } from '../helpers/multipart.ts';
import { expectAccessible, testBrowser, type TestBrowser } from '../helpers/browser.ts';
import { signedInContext } from '../helpers/browser-session.ts';
import { runStatusesCleanup } from '../../services/statuses-cleanup.ts';
import { findCleanupPolicy } from '../../storage/statuses-cleanup.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const AS = 'https://www.w3.org/ns/activitystreams';

let ours: Instance;
let peer: StrictPeer;
let browser: TestBrowser;
let alice: TestUser, bob: TestUser;
let gus: string;

beforeAll(async () => {
  const peerWithActor = async () => {
    const p = await startStrictPeer();
    gus = await p.addActor('gus');
    return p;
  };
  [ours, peer, browser] = await Promise.all([startHttpsInstance(), peerWithActor(), testBrowser()]);
  [alice, bob] = await registerUsers(ours.app, 'alice', 'bob');
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await Promise.all([ours?.close(), peer?.close()]);
});

const call = async (user: TestUser, method: 'GET' | 'POST', url: string, payload?: object) => {
  const res = await ours.app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(200);
  return res.json() as Json;
};
const post = (payload: object) => call(alice, 'POST', '/api/v1/statuses', payload);

describe('automated post deletion', () => {
  it('the settings page saves a policy without scripts, shows it back, refuses bad input, and passes axe', async () => {
    const { context, page } = await signedInContext(browser, ours.url, alice, false);
    try {
      await page.goto(`${ours.url}/statuses_cleanup`);
      // Mastodon's defaults before anything is saved.
      expect(await page.isChecked('input[name=enabled]')).toBe(false);
      expect(await page.inputValue('#min_status_age')).toBe(String(14 * 86_400));
      for (const [name, on] of [['keep_pinned', true], ['keep_direct', true], ['keep_self_fav', true], ['keep_self_bookmark', true], ['keep_polls', false], ['keep_media', false]] as const) {
        expect(await page.isChecked(`input[name=${name}]`), name).toBe(on);
      }
      await page.check('input[name=enabled]');
      await page.check('input[name=keep_polls]');
      await page.check('input[name=keep_media]');
      await page.selectOption('#min_status_age', String(7 * 86_400));
      await page.fill('#min_favs', '1');
      await page.fill('#min_reblogs', '1');
      await Promise.all([page.waitForURL((u) => u.search === '?notice=saved'), page.click('form[action="/statuses_cleanup"] button[type=submit]')]);
      expect(await page.textContent('body')).toContain('Your changes are saved.');
      expect(await page.isChecked('input[name=keep_media]')).toBe(true);
      expect(await page.inputValue('#min_favs')).toBe('1');
      expect(await findCleanupPolicy(ours.ctx.db, alice.id)).toEqual({
        account_id: alice.id, enabled: true, min_status_age: 7 * 86_400, keep_direct: true, keep_pinned: true, keep_polls: true,
        keep_media: true, keep_self_fav: true, keep_self_bookmark: true, min_favs: 1, min_reblogs: 1,
      });

      // An age not among the choices, a threshold that is not a number: 422 with the reason, nothing changed.
      // Sent as a crafted request would be (the page's own select and number fields allow no such values).
      const csrf = await page.getAttribute('input[name=_csrf]', 'value');
      for (const body of [{ min_status_age: '12345', enabled: '1' }, { min_status_age: String(7 * 86_400), min_favs: 'lots' }] as Record<string, string>[]) {
        const res = await context.request.post(`${ours.url}/statuses_cleanup`, { form: { _csrf: csrf!, ...body }, maxRedirects: 0 });
        expect(res.status()).toBe(422);
        expect(await res.text()).toMatch(/Choose an age from the list|Thresholds are whole numbers/);
      }
      // Without the CSRF token: refused.
      expect((await context.request.post(`${ours.url}/statuses_cleanup`, { form: { min_status_age: String(7 * 86_400) }, maxRedirects: 0 })).status()).toBe(403);
      expect((await findCleanupPolicy(ours.ctx.db, alice.id))?.min_status_age).toBe(7 * 86_400);
    } finally {
      await context.close();
    }
    const withScripts = await signedInContext(browser, ours.url, alice, true);
    try {
      await withScripts.page.goto(`${ours.url}/statuses_cleanup`);
      await expectAccessible(withScripts.page, 'statuses cleanup');
    } finally {
      await withScripts.context.close();
    }
    // Signed out: to the sign-in page.
    const anonymous = await ours.app.inject({ method: 'GET', url: '/statuses_cleanup' });
    expect([anonymous.statusCode, anonymous.headers.location]).toEqual([303, expect.stringContaining('/auth/sign_in')]);
  }, 90_000);

  it('each exception keeps its post; the rest are deleted and a follower\'s server receives the Delete', async () => {
    expect(await peer.send('gus', `${ours.url}/users/alice/inbox`, { '@context': AS, id: `${gus}/follows/1`, type: 'Follow', actor: gus, object: `${ours.url}/users/alice` })).toBe(202);
    await peer.waitFor((d) => d.activity.type === 'Accept' && d.verified);
    await until(() => call(alice, 'GET', `/api/v1/accounts/${alice.id}`), (a) => a.followers_count === 1, 'gus follows alice');

    const data = await sharp({ create: { width: 60, height: 40, channels: 3, background: '#4a4' } }).png().toBuffer();
    const form = await multipart({ file: { data, filename: 'a.png', type: 'image/png' } });
    const media = await ours.app.inject({ method: 'POST', url: '/api/v2/media', headers: { ...bearer(alice.token), ...form.headers }, payload: form.payload });
    expect([200, 202], media.body).toContain(media.statusCode);
    await until(() => ours.app.inject({ method: 'GET', url: `/api/v1/media/${media.json().id}`, headers: bearer(alice.token) }), (r) => r.statusCode === 200, 'the picture is processed');

    const kept: Record<string, Json> = {
      pinned: await post({ status: 'pinned' }),
      direct: await post({ status: '@bob just us', visibility: 'direct' }),
      poll: await post({ status: 'a poll', poll: { options: ['yes', 'no'], expires_in: 86_400 } }),
      media: await post({ status: 'a picture', media_ids: [media.json().id] }),
      selfFav: await post({ status: 'I like this one' }),
      selfBookmark: await post({ status: 'for later' }),
      favedByOthers: await post({ status: 'bob likes it' }),
      boostedByOthers: await post({ status: 'bob boosts it' }),
      young: await post({ status: 'too new to go' }),
    };
    await call(alice, 'POST', `/api/v1/statuses/${kept.pinned!.id}/pin`);
    await call(alice, 'POST', `/api/v1/statuses/${kept.selfFav!.id}/favourite`);
    await call(alice, 'POST', `/api/v1/statuses/${kept.selfBookmark!.id}/bookmark`);
    await call(bob, 'POST', `/api/v1/statuses/${kept.favedByOthers!.id}/favourite`);
    await call(bob, 'POST', `/api/v1/statuses/${kept.boostedByOthers!.id}/reblog`);
    const doomed = [await post({ status: 'old news 1' }), await post({ status: 'old news 2', visibility: 'unlisted' })];

    // Eight days pass for every post but the young one (the policy keeps a week).
    const old = [...Object.entries(kept).filter(([k]) => k !== 'young').map(([, s]) => s.id), ...doomed.map((s) => s.id)];
    await ours.ctx.db.query(`UPDATE statuses SET created_at = now() - interval '8 days' WHERE id = ANY($1::bigint[])`, [old]);

    // The repeating job is scheduled, and its run deletes the rest.
    expect(await ours.ctx.jobs.fanout.getJobScheduler('clean-statuses')).toMatchObject({ every: 600_000 });
    expect(await runStatusesCleanup(ours.ctx)).toBe(2);
    for (const s of doomed) expect((await ours.app.inject({ method: 'GET', url: `/api/v1/statuses/${s.id}`, headers: bearer(alice.token) })).statusCode).toBe(404);
    for (const [what, s] of Object.entries(kept)) {
      expect((await ours.app.inject({ method: 'GET', url: `/api/v1/statuses/${s.id}`, headers: bearer(alice.token) })).statusCode, what).toBe(200);
    }
    for (const s of doomed) {
      const del = await peer.waitFor((d) => d.activity.type === 'Delete' && ((d.activity.object as Json | undefined)?.id ?? d.activity.object) === s.uri);
      expect(del.verified, del.reason).toBe(true);
      expect(del.activity.actor).toBe(`${ours.url}/users/alice`);
      expect((del.activity.object as Json).type).toBe('Tombstone');
    }
    expect((await call(alice, 'GET', `/api/v1/accounts/${alice.id}`)).statuses_count).toBe(Object.keys(kept).length);

    // A second run finds nothing more; a disabled policy deletes nothing.
    expect(await runStatusesCleanup(ours.ctx)).toBe(0);
    await ours.ctx.db.query(`UPDATE account_statuses_cleanup_policies SET enabled = false, keep_media = false WHERE account_id = $1`, [alice.id]);
    expect(await runStatusesCleanup(ours.ctx)).toBe(0);
    expect((await ours.app.inject({ method: 'GET', url: `/api/v1/statuses/${kept.media!.id}`, headers: bearer(alice.token) })).statusCode).toBe(200);
  }, 90_000);
});
