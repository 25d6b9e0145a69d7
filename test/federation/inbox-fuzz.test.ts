// The inbox, fed signed activities from a peer's actor with malformed fields: wrong types, missing ids, NUL and lone
// surrogates in text, enormous arrays, deep nesting. Each POST answers 202 or 4xx; afterwards no received activity
// is waiting to be retried (a listener that threw), what was stored reads back through the API, and text with NUL
// (inlined in an activity, or in a document we fetch) is stored without it (federation/storable-documents.ts).
// Fixed seed and count here; `npm run fuzz` runs more with a random one (FUZZ_SEED, FUZZ_RUNS).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { bearer, registerUsers, type TestUser } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { BAD_STRINGS, ODD_NUMBERS, WRONG_SHAPES, deep } from '../helpers/fuzz-values.ts';

const SEED = process.env.FUZZ_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED ?? 18);
const RUNS = Number(process.env.FUZZ_RUNS ?? 6) * 20;
const AS = 'https://www.w3.org/ns/activitystreams';
const PUBLIC = `${AS}#Public`;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- activities and API bodies
let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let gus: string;
let alicePost: string;
let seq = 0;
const fresh = (kind = 'things') => `${gus}/${kind}/${++seq}`;
const aliceId = () => `${ours.url}/users/alice`;
const api = async (url: string) => {
  const res = await ours.app.inject({ method: 'GET', url, headers: bearer(alice.token) });
  return { status: res.statusCode, body: res.json() as Json };
};

beforeAll(async () => {
  [ours, peer] = await Promise.all([startHttpsInstance(), startStrictPeer()]);
  [alice] = await registerUsers(ours.app, 'alice');
  gus = await peer.addActor('gus');
  // gus follows alice and alice follows back, so gus's posts concern this server.
  expect(await peer.send('gus', `${aliceId()}/inbox`, { '@context': AS, id: fresh(), type: 'Follow', actor: gus, object: aliceId() })).toBe(202);
  const gusHere = await until(() => api(`/api/v1/accounts/lookup?acct=gus@${peer.domain}`), (r) => r.status === 200, 'gus known');
  await ours.app.inject({ method: 'POST', url: `/api/v1/accounts/${gusHere.body.id}/follow`, headers: bearer(alice.token) });
  await until(async () => (await api(`/api/v1/accounts/relationships?id[]=${gusHere.body.id}`)).body[0], (r) => r.following === true, 'alice follows gus');
  alicePost = (await ours.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(alice.token), payload: { status: 'hello' } })).json().uri;
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), peer?.close()]);
});

const note = (extra: Json = {}): Json => ({
  id: fresh('statuses'), type: 'Note', attributedTo: gus, content: '<p>hi</p>', published: new Date().toISOString(), to: [PUBLIC], cc: [`${gus}/followers`],
  tag: [{ type: 'Mention', href: aliceId(), name: '@alice' }, { type: 'Hashtag', href: `${peer.url}/tags/x`, name: '#x' }], ...extra,
});

/** Well-formed activities of every kind the inbox takes (and one it does not), to be broken. */
const TEMPLATES: Record<string, () => Json> = {
  create: () => { const n = note(); return { id: `${n.id}/activity`, type: 'Create', actor: gus, object: n, to: n.to, cc: n.cc }; },
  createQuestion: () => { const n = note({ type: 'Question', name: 'q', oneOf: [{ type: 'Note', name: 'a', replies: { type: 'Collection', totalItems: 1 } }, { type: 'Note', name: 'b' }], endTime: new Date(Date.now() + 3600_000).toISOString() }); return { id: `${n.id}/activity`, type: 'Create', actor: gus, object: n }; },
  reply: () => { const n = note({ inReplyTo: alicePost }); return { id: `${n.id}/activity`, type: 'Create', actor: gus, object: n }; },
  update: () => ({ id: fresh(), type: 'Update', actor: gus, object: note({ updated: new Date().toISOString() }) }),
  updatePerson: () => ({ id: fresh(), type: 'Update', actor: gus, object: { id: gus, type: 'Person', preferredUsername: 'gus', name: 'Gus', summary: '<p>bio</p>', inbox: `${gus}/inbox`, attachment: [{ type: 'PropertyValue', name: 'k', value: 'v' }] } }),
  like: () => ({ id: fresh(), type: 'Like', actor: gus, object: alicePost, content: '⭐' }),
  announce: () => ({ id: fresh(), type: 'Announce', actor: gus, object: alicePost, to: [PUBLIC] }),
  follow: () => ({ id: fresh(), type: 'Follow', actor: gus, object: aliceId() }),
  undo: () => ({ id: fresh(), type: 'Undo', actor: gus, object: { id: fresh(), type: 'Like', actor: gus, object: alicePost } }),
  delete: () => ({ id: fresh(), type: 'Delete', actor: gus, object: { id: fresh('statuses'), type: 'Tombstone' } }),
  block: () => ({ id: fresh(), type: 'Block', actor: gus, object: 'https://nobody.invalid/users/x' }),
  flag: () => ({ id: fresh(), type: 'Flag', actor: gus, object: [aliceId(), alicePost], content: 'report' }),
  add: () => ({ id: fresh(), type: 'Add', actor: gus, object: `${gus}/statuses/1`, target: `${gus}/collections/featured` }),
  accept: () => ({ id: fresh(), type: 'Accept', actor: gus, object: `${ours.url}/follows/123` }),
  unknown: () => ({ id: fresh(), type: 'Dance', actor: gus, object: aliceId() }),
};

/** Bad values for activities: the shared ones, plus enormous arrays and deep nesting. */
const badField = () => fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom<unknown>(...BAD_STRINGS, ...ODD_NUMBERS, ...WRONG_SHAPES) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(Array.from({ length: 3000 }, (_, i) => ({ type: 'Mention', href: `${aliceId()}?${i}`, name: `@a${i}` })), Array.from({ length: 20_000 }, () => PUBLIC), deep(2000, 'object'), deep(2000, 'array')) },
  { weight: 2, arbitrary: fc.constant(Symbol.for('delete')) },
);

/** A template with up to three of its fields (of the activity or its object) replaced or removed. */
const activityArb = () => fc.record({
  template: fc.constantFrom(...Object.keys(TEMPLATES)),
  edits: fc.array(fc.tuple(fc.boolean(), fc.nat(), badField()), { minLength: 1, maxLength: 3 }),
}).map(({ template, edits }) => {
  const activity = TEMPLATES[template]!();
  for (const [inObject, index, value] of edits) {
    const target = inObject && activity.object !== null && typeof activity.object === 'object' && !Array.isArray(activity.object) ? activity.object : activity;
    const keys = Object.keys(target).filter((k) => target !== activity || k !== 'actor'); // the actor must stay the signer
    const key = keys[index % keys.length]!;
    if (value === Symbol.for('delete')) delete target[key];
    else target[key] = value;
  }
  return { '@context': AS, ...activity };
});

async function send(activity: Json): Promise<number> {
  return peer.send('gus', `${ours.url}/inbox`, activity);
}

/** Received activities waiting for a retry: their listener threw. */
async function retriedInbound(): Promise<string[]> {
  const q = ours.ctx.federationQueue;
  const jobs = (await Promise.all([q.queue, ...q.lanes].map((x) => x.getJobs(['delayed', 'waiting', 'active'])))).flat();
  return jobs.filter((j) => j?.data?.type === 'inbox' && j.data.attempt > 0).map((j) => `${j.data.activity?.type} ${j.data.activity?.id}`);
}

/** Until nothing is waiting or running (retries wait as delayed jobs, which are what retriedInbound looks for). */
async function drained(): Promise<void> {
  const q = ours.ctx.federationQueue;
  // What is still waiting or running, named, so a listener that hangs shows which activity it was given.
  const busy = async () => (await Promise.all([q.queue, ...q.lanes].map((x) => x.getJobs(['waiting', 'active', 'prioritized']))))
    .flat().filter(Boolean).map((j) => `${j.data?.type} ${JSON.stringify(j.data?.activity ?? j.data?.activityId ?? '').slice(0, 600)}`);
  await until(busy, (l) => l.length === 0, 'inbox queue drained', 60_000);
  await new Promise((r) => setTimeout(r, 300));
  await until(busy, (l) => l.length === 0, 'inbox queue drained', 60_000);
}

describe('inbox fuzz', () => {
  it('stores text with NUL and lone surrogates without them, inlined or fetched', async () => {
    const inlined = note({ content: '<p>a\u0000b\ud800c</p>', summary: 'w\u0000arn', contentMap: { 'e\u0000n': '<p>a\u0000b</p>' } });
    expect(await send({ '@context': AS, id: `${inlined.id}/activity`, type: 'Create', actor: gus, object: inlined, to: inlined.to })).toBe(202);
    const fetched = note({ content: '<p>fetched\u0000 text</p>' });
    peer.publish('gus', { '@context': AS, ...fetched });
    expect(await send({ '@context': AS, id: fresh(), type: 'Announce', actor: gus, object: fetched.id, to: [PUBLIC] })).toBe(202);
    const found = async (uri: string) => (await api(`/api/v2/search?q=${encodeURIComponent(uri)}&type=statuses&resolve=true`)).body.statuses as Json[];
    const a = (await until(() => found(inlined.id), (l) => l.length === 1, 'inlined note stored'))[0]!;
    expect(a.content).toBe('<p>ab\ufffdc</p>');
    expect(a.spoiler_text).toBe('warn');
    const b = (await until(() => found(fetched.id), (l) => l.length === 1, 'fetched note stored'))[0]!;
    expect(b.content).toBe('<p>fetched text</p>');
  });

  it(`answers malformed activities (seed ${SEED}, ${RUNS}) with 202 or 4xx, and leaves nothing to retry`, async () => {
    const statuses: Record<number, number> = {};
    const bad: string[] = [];
    for (const activity of fc.sample(activityArb(), { seed: SEED, numRuns: RUNS })) {
      const status = await send(activity);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status !== 202 && (status < 400 || status >= 500)) bad.push(`${status} ${JSON.stringify(activity).slice(0, 400)}`);
    }
    console.log(`${RUNS} activities: ${JSON.stringify(statuses)}`);
    expect(bad).toEqual([]);
    await drained();
    expect(await retriedInbound()).toEqual([]);
  }, Math.max(180_000, RUNS * 1000));

  it('stored only what reads back', async () => {
    const { rows } = await ours.ctx.db.query(`SELECT s.id::text, s.uri FROM statuses s JOIN accounts a ON a.id = s.account_id WHERE a.domain IS NOT NULL`);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.uri.startsWith(`${peer.url}/`), row.uri).toBe(true);
      const res = await ours.app.inject({ method: 'GET', url: `/api/v1/statuses/${row.id}`, headers: bearer(alice.token) });
      expect(res.statusCode, `${row.uri}: ${res.body.slice(0, 200)}`).toBeLessThan(500);
    }
    const gusHere = await api(`/api/v1/accounts/lookup?acct=gus@${peer.domain}`);
    expect(gusHere.status).toBe(200);
    expect((await api(`/api/v1/accounts/${gusHere.body.id}/statuses`)).status).toBe(200);
    expect((await api('/api/v1/timelines/home')).status).toBe(200);
    expect((await api('/api/v1/notifications')).status).toBe(200);
  });
});
