import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { expectEntity } from '../helpers/schema.ts';
import { startStrictPeer, type PeerDelivery, type StrictPeer } from '../helpers/strict-peer.ts';

// Polls and edits against a peer that behaves like GoToSocial and snac (401 to unsigned GETs, 202 then verify,
// draft-cavage only): its Question is taken as a poll, our vote reaches it as Mastodon sends votes, its vote on our
// poll is counted, and our edit reaches it as an Update it can verify.
let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let gus: string;
const AS = 'https://www.w3.org/ns/activitystreams';
// As Mastodon writes its context: votersCount is in its own namespace.
const MASTODON_CONTEXT = [AS, { toot: 'http://joinmastodon.org/ns#', votersCount: 'toot:votersCount' }];

beforeAll(async () => {
  [ours, peer] = await Promise.all([startHttpsInstance({ AUTHORIZED_FETCH: 'true' }), startStrictPeer()]);
  [alice] = await registerUsers(ours.app, 'alice');
  gus = await peer.addActor('gus');
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close()]);
});

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API responses
const api = async (method: 'GET' | 'POST' | 'PUT', url: string, payload?: object): Promise<{ status: number; body: Json }> => {
  const res = await ours.app.inject({ method, url, headers: bearer(alice.token), ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : {} };
};
const aliceId = () => `${ours.url}/users/alice`;
const delivered = async (type: string, match: (a: Json) => boolean = () => true): Promise<PeerDelivery> => {
  const d = await peer.waitFor((r) => r.activity.type === type && match(r.activity));
  expect(d, JSON.stringify(d)).toMatchObject({ verified: true, spec: 'draft-cavage' });
  return d;
};

describe('polls and edits with a strict server', () => {
  it('follows both ways', async () => {
    const found = await api('GET', `/api/v2/search?q=${encodeURIComponent(`@gus@${peer.domain}`)}&resolve=true`);
    const gusOnOurs = found.body.accounts[0];
    expect((await api('POST', `/api/v1/accounts/${gusOnOurs.id}/follow`)).status).toBe(200);
    await until(async () => (await api('GET', `/api/v1/accounts/relationships?id[]=${gusOnOurs.id}`)).body[0], (r) => r.following === true, 'the peer accepted');
    expect(await peer.send('gus', `${aliceId()}/inbox`, { '@context': AS, id: `${gus}/follows/1`, type: 'Follow', actor: gus, object: aliceId() })).toBe(202);
    await delivered('Accept');
  });

  it('takes its Question as a poll and sends our vote to its author as a Note named after the option', async () => {
    const id = `${peer.url}/users/gus/statuses/q1`;
    const question = {
      '@context': MASTODON_CONTEXT, id, type: 'Question', attributedTo: gus, content: '<p>Tabs or spaces?</p>', published: new Date().toISOString(),
      to: [`${AS}#Public`], cc: [`${gus}/followers`], endTime: new Date(Date.now() + 3_600_000).toISOString(), votersCount: 3,
      oneOf: [
        { type: 'Note', name: 'tabs', replies: { type: 'Collection', totalItems: 1 } },
        { type: 'Note', name: 'spaces', replies: { type: 'Collection', totalItems: 2 } },
      ],
    };
    peer.publish('gus', question);
    expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': MASTODON_CONTEXT, id: `${id}/activity`, type: 'Create', actor: gus, object: question, to: question.to, cc: question.cc })).toBe(202);
    const home = await until(async () => (await api('GET', '/api/v1/timelines/home')).body as Json[], (l) => l.some((s) => s.uri === id), 'the Question at home');
    const status = home.find((s) => s.uri === id)!;
    expectEntity('Poll', status.poll);
    expect(status.poll).toMatchObject({ multiple: false, votes_count: 3, voters_count: 3, expired: false, voted: false });
    expect(status.poll.options).toEqual([{ title: 'tabs', votes_count: 1 }, { title: 'spaces', votes_count: 2 }]);

    expect((await api('POST', `/api/v1/polls/${status.poll.id}/votes`, { choices: [1] })).status).toBe(200);
    const vote = await delivered('Create', (a) => a.object?.name === 'spaces');
    expect(vote.activity.object as Json).toMatchObject({ type: 'Note', name: 'spaces', inReplyTo: id, attributedTo: aliceId(), to: gus });
    expect((vote.activity.object as Json).content ?? null).toBeNull();

    // Its server's Update of the Question brings the new counts.
    const updated = { ...question, votersCount: 4, oneOf: [question.oneOf[0], { ...question.oneOf[1], replies: { type: 'Collection', totalItems: 3 } }] };
    expect(await peer.send('gus', `${ours.url}/inbox`, { '@context': MASTODON_CONTEXT, id: `${id}#updates/1`, type: 'Update', actor: gus, object: updated, to: question.to })).toBe(202);
    const poll = await until(async () => (await api('GET', `/api/v1/polls/${status.poll.id}`)).body, (p) => p.votes_count === 4, 'the new counts');
    expect(poll).toMatchObject({ voters_count: 4, voted: true, own_votes: [1] });
    expect((await api('GET', `/api/v1/statuses/${status.id}`)).body.edited_at).toBeNull();
  });

  it('sends our poll as a Question, counts the strict server\'s vote, and sends an edit it verifies', async () => {
    const post = (await api('POST', '/api/v1/statuses', { status: 'Left or right?', poll: { options: ['left', 'right'], expires_in: 600, multiple: true } })).body;
    const create = await delivered('Create', (a) => a.object?.id === post.uri);
    expect(create.activity.object as Json).toMatchObject({ type: 'Question', votersCount: 0 });
    expect((create.activity.object as Json).anyOf.map((o: Json) => [o.name, o.replies.totalItems])).toEqual([['left', 0], ['right', 0]]);
    expect(Date.parse((create.activity.object as Json).endTime)).toBe(Date.parse(post.poll.expires_at));

    // gus votes for both options, as Mastodon does on a multiple-choice poll: one Note each.
    for (const [i, name] of ['left', 'right'].entries()) {
      const note = { '@context': AS, id: `${gus}#votes/1/${i}`, type: 'Note', attributedTo: gus, name, inReplyTo: post.uri, to: aliceId() };
      expect(await peer.send('gus', `${aliceId()}/inbox`, { '@context': AS, id: `${note.id}/activity`, type: 'Create', actor: gus, object: note, to: aliceId() })).toBe(202);
    }
    const counted = await until(async () => (await api('GET', `/api/v1/polls/${post.poll.id}`)).body, (p) => p.votes_count === 2, 'gus\'s votes');
    expect(counted).toMatchObject({ voters_count: 1 });
    // The same vote again changes nothing; the counts went out in an Update of the Question.
    const again = { '@context': AS, id: `${gus}#votes/1/0`, type: 'Note', attributedTo: gus, name: 'left', inReplyTo: post.uri, to: aliceId() };
    expect(await peer.send('gus', `${aliceId()}/inbox`, { '@context': AS, id: `${again.id}/activity/2`, type: 'Create', actor: gus, object: again, to: aliceId() })).toBe(202);
    await delivered('Update', (a) => a.object?.id === post.uri && a.object.votersCount === 1 && a.object.anyOf?.every((o: Json) => o.replies.totalItems === 1));
    expect((await api('GET', `/api/v1/polls/${post.poll.id}`)).body.votes_count).toBe(2);
    // Not stored as replies.
    expect((await api('GET', `/api/v1/statuses/${post.id}/context`)).body.descendants).toEqual([]);

    const edited = await api('PUT', `/api/v1/statuses/${post.id}`, { status: 'Left or right? (edited)', poll: { options: ['left', 'right'], expires_in: 600, multiple: true } });
    expect(edited.status).toBe(200);
    const update = await delivered('Update', (a) => a.object?.id === post.uri && String(a.object.content).includes('edited'));
    expect(update.activity.object as Json).toMatchObject({ type: 'Question', updated: expect.any(String) });
  });
});
