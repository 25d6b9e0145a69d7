import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:https';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';

// The strict peer (GoToSocial/snac behaviour) checked against itself, so tests of our server can rely on it.
let a: StrictPeer;
let b: StrictPeer;

beforeAll(async () => {
  [a, b] = await Promise.all([startStrictPeer(), startStrictPeer()]);
  await Promise.all([a.addActor('alice'), b.addActor('bob')]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

describe('strict peer', () => {
  it('is found by WebFinger, and serves its actor to signed GETs only', async () => {
    const wf = await b.unsignedGet(`${a.url}/.well-known/webfinger?resource=acct:alice@${a.domain}`);
    expect(wf.status).toBe(200);
    const self = (wf.json!.links as { rel: string; type: string; href: string }[]).find((l) => l.rel === 'self');
    expect(self).toEqual({ rel: 'self', type: 'application/activity+json', href: a.actorId('alice') });

    expect((await b.unsignedGet(self!.href)).status).toBe(401);
    const signed = await b.signedGet(null, self!.href);
    expect(signed.status).toBe(200);
    expect(signed.json).toMatchObject({ id: a.actorId('alice'), type: 'Person', inbox: `${a.actorId('alice')}/inbox`, publicKey: { id: a.keyId('alice') } });
    expect(a.gets).toContainEqual(expect.objectContaining({ path: '/users/alice', signed: true, keyId: b.keyId('peer.internal'), status: 200 }));
    expect(a.gets).toContainEqual(expect.objectContaining({ path: '/users/alice', signed: false, status: 401 }));
    expect((await b.unsignedGet(a.keyId('alice'))).status).toBe(200);
  });

  it('refuses a GET signed only with RFC 9421', async () => {
    const req = await b.sign(null, new Request(a.actorId('alice'), { headers: { accept: 'application/activity+json', 'user-agent': 'test' } }), 'rfc9421');
    expect((await fetch(req)).status).toBe(401);
    expect(a.gets.at(-1)).toMatchObject({ spec: 'rfc9421', signed: false, status: 401 });
  });

  it('verifies a Follow and answers with a verified Accept embedding it', async () => {
    const follow = { '@context': 'https://www.w3.org/ns/activitystreams', id: `${a.actorId('alice')}/follows/1`, type: 'Follow', actor: a.actorId('alice'), object: b.actorId('bob') };
    expect(await a.send('alice', `${b.actorId('bob')}/inbox`, follow)).toBe(202);
    expect(await b.waitFor((d) => d.activity.id === follow.id)).toMatchObject({ verified: true, spec: 'draft-cavage', inbox: '/users/bob/inbox' });
    const accept = await a.waitFor((d) => d.activity.type === 'Accept');
    expect(accept).toMatchObject({ verified: true, activity: { actor: b.actorId('bob'), object: follow } });
    expect(b.followers('bob')).toEqual([a.actorId('alice')]);
  });

  it('answers 202 to an RFC 9421-signed POST, then records it unverified', async () => {
    const like = { '@context': 'https://www.w3.org/ns/activitystreams', id: `${a.actorId('alice')}/likes/1`, type: 'Like', actor: a.actorId('alice'), object: b.actorId('bob') };
    const req = new Request(`${b.url}/inbox`, { method: 'POST', body: JSON.stringify(like), headers: { 'content-type': 'application/activity+json', 'user-agent': 'test' } });
    expect((await fetch(await a.sign('alice', req, 'rfc9421'))).status).toBe(202);
    const got = await b.waitFor((d) => d.activity.id === like.id);
    expect(got).toMatchObject({ verified: false, spec: 'rfc9421', inbox: '/inbox' });
    expect(got.reason).toMatch(/RFC 9421/);
  });

  it('records a draft-cavage POST whose body does not match its Digest as unverified', async () => {
    const like = { type: 'Like', id: `${a.actorId('alice')}/likes/2`, actor: a.actorId('alice'), object: b.actorId('bob') };
    const signed = await a.sign('alice', new Request(`${b.url}/inbox`, { method: 'POST', body: JSON.stringify(like), headers: { 'user-agent': 'test' } }));
    const tampered = new Request(signed, { body: JSON.stringify({ ...like, object: a.actorId('alice') }) });
    expect((await fetch(tampered)).status).toBe(202);
    expect(await b.waitFor((d) => d.activity.id === like.id)).toMatchObject({ verified: false, reason: 'Digest does not match the body' });
  });

  it('records an activity signed by someone other than its actor as unverified', async () => {
    const forged = { type: 'Like', id: `${a.actorId('alice')}/likes/3`, actor: b.actorId('bob'), object: b.actorId('bob') };
    expect(await a.send('alice', `${b.url}/inbox`, forged)).toBe(202);
    expect((await b.waitFor((d) => d.activity.id === forged.id)).reason).toMatch(/key owner .* is not the actor/);
  });

  it('serves published objects to signed GETs', async () => {
    const note = { '@context': 'https://www.w3.org/ns/activitystreams', id: `${a.actorId('alice')}/statuses/1`, type: 'Note', attributedTo: a.actorId('alice'), content: 'hi' };
    a.publish('alice', note);
    expect((await b.signedGet('bob', note.id)).json).toEqual(note);
    expect((await b.unsignedGet(note.id)).status).toBe(401);
  });

  it('answers 418 to a request without User-Agent', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      request(`${a.url}/.well-known/nodeinfo`, (res) => { res.resume(); resolve(res.statusCode ?? 0); }).on('error', reject).end();
    });
    expect(status).toBe(418);
    expect((await a.unsignedGet(`${a.url}/.well-known/nodeinfo`)).status).toBe(200);
  });
});
