// An instance-wide suspension of a real https peer (the strict fake server): its inbox POSTs are refused before any
// key is fetched, nothing is delivered to it, nothing is looked up there, and lifting the block restores all of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { runCli } from '../../cli/admin.ts';

let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let gus: string;
const AS = 'https://www.w3.org/ns/activitystreams';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (method: 'GET' | 'POST', url: string, payload?: object): Promise<Json> =>
  (await ours.app.inject({ method, url, headers: bearer(alice.token), ...(payload ? { payload } : {}) })).json();
const cli = async (...args: string[]) => {
  const lines: string[] = [];
  await runCli(args, ours.ctx.db, (l) => lines.push(l), (what) => publishTokenInvalidation(ours.ctx.redis, ours.config.redisPrefix, what), { redis: ours.ctx.redis, redisPrefix: ours.config.redisPrefix });
  return lines;
};
const deliveredCreate = (content: string) => peer.received.some((d) => d.activity.type === 'Create' && JSON.stringify(d.activity).includes(content));

beforeAll(async () => {
  [ours, peer] = await Promise.all([startHttpsInstance(), startStrictPeer()]);
  [alice] = await registerUsers(ours.app, 'alice');
  gus = await peer.addActor('gus');
  await peer.addActor('newbie');
  // gus follows alice, so alice's posts go to the peer
  expect(await peer.send('gus', `${ours.url}/users/alice/inbox`, { '@context': AS, id: `${gus}/follows/1`, type: 'Follow', actor: gus, object: `${ours.url}/users/alice` })).toBe(202);
  await peer.waitFor((d) => d.activity.type === 'Accept' && d.verified);
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close()]);
});

describe('a suspended server', () => {
  it('is refused, delivered nothing and looked up nowhere; unblocking restores it', async () => {
    await api('POST', '/api/v1/statuses', { status: 'before the block' });
    await peer.waitFor((d) => d.activity.type === 'Create' && JSON.stringify(d.activity).includes('before the block'));

    expect(await cli('domains', 'block', peer.domain, '--severity', 'suspend')).toEqual([expect.stringContaining('blocked (suspend)'), '1 account(s) suspended']);

    // Its inbox POSTs: 403 before the key of an actor never seen is fetched.
    const getsBefore = peer.gets.length;
    const follow = { '@context': AS, id: `${peer.actorId('newbie')}/follows/1`, type: 'Follow', actor: peer.actorId('newbie'), object: `${ours.url}/users/alice` };
    expect(await peer.send('newbie', `${ours.url}/inbox`, follow)).toBe(403);
    expect(await peer.send('gus', `${ours.url}/users/alice/inbox`, { ...follow, id: `${gus}/follows/2`, actor: gus })).toBe(403);
    expect(peer.gets.slice(getsBefore)).toEqual([]);
    expect((await api('GET', `/api/v1/accounts/${alice.id}/followers`)).map((a: Json) => a.suspended)).toEqual([true]); // gus, suspended

    // Nothing is looked up there.
    const found = await api('GET', `/api/v2/search?q=${encodeURIComponent(`@newbie@${peer.domain}`)}&resolve=true&type=accounts`);
    expect(found.accounts).toEqual([]);
    expect(peer.gets.slice(getsBefore)).toEqual([]);

    // Nothing is delivered: the post made while blocked never arrives, the one after the unblock does.
    await api('POST', '/api/v1/statuses', { status: 'during the block' });
    // Its delivery job has run (while the block holds) before the unblock: "made while blocked" means just that.
    await until(async () => (await ours.ctx.db.query('SELECT count(*)::int AS n FROM outbox')).rows[0].n, (n) => n === 0, 'the outbox emptied');
    expect(await cli('domains', 'unblock', peer.domain)).toEqual([`${peer.domain} unblocked`, '1 account(s) unsuspended']);
    await api('POST', '/api/v1/statuses', { status: 'after the block' });
    await peer.waitFor((d) => d.activity.type === 'Create' && JSON.stringify(d.activity).includes('after the block'));
    expect(deliveredCreate('during the block')).toBe(false);
    expect((await api('GET', `/api/v1/accounts/${alice.id}/followers`)).map((a: Json) => a.suspended)).toEqual([undefined]);
  }, 60_000);
});
