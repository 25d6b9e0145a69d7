import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { signRequest } from '@fedify/fedify';
import { startHttpsInstance, until, type Instance } from '../helpers/instances.ts';
import { workSettled } from '../helpers/work-settled.ts';
import { freePort } from '../helpers/listen.ts';
import { bearer, createApp, registerUser, type TestUser } from '../helpers/oauth.ts';
import { rsaKeyPair, startStrictPeer, type RsaKeyPair, type StrictPeer } from '../helpers/strict-peer.ts';
import { healthOf } from '../../federation/health.ts';
import { listServerHealth } from '../../storage/federation-health.ts';

type Factories = { authenticatedDocumentLoaderFactory: unknown; documentLoaderFactory: (options?: unknown) => unknown };

/**
 * The fix that signs every GET (federation/instance-actor.ts signedLoader), switched off: the federation's signing
 * loaders are made unsigned, as every GET was before the fix, and a GoToSocial-like server answers them 401. (The
 * federation object itself is changed rather than a module mocked: Fedify's side may be loaded outside the test
 * runner's module graph, federation/lazy.ts.)
 */
function signedFetches(on: boolean): void {
  const federation = ours.ctx.federation as unknown as Factories;
  signing.saved ??= federation.authenticatedDocumentLoaderFactory;
  federation.authenticatedDocumentLoaderFactory = on ? signing.saved : (_identity: unknown, options?: unknown) => federation.documentLoaderFactory(options);
}
const signing: { saved?: unknown } = {};

// Every JSON log line this process writes (pino writes to fd 1 through fs, not through process.stdout).
const lines: Record<string, unknown>[] = [];
function capture(chunk: unknown): void {
  for (const line of String(chunk).split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch { /* not one of ours */ }
  }
}
const realWrite = fs.write, realWriteSync = fs.writeSync;
vi.spyOn(fs, 'write').mockImplementation(((fd: number, data: unknown, ...rest: unknown[]) => {
  if (fd === 1) capture(Buffer.isBuffer(data) ? data.toString('utf8') : data);
  return (realWrite as (...a: unknown[]) => void)(fd, data, ...rest);
}) as typeof fs.write);
vi.spyOn(fs, 'writeSync').mockImplementation(((fd: number, data: unknown, ...rest: unknown[]) => {
  if (fd === 1) capture(Buffer.isBuffer(data) ? data.toString('utf8') : data);
  return (realWriteSync as (...a: unknown[]) => number)(fd, data, ...rest);
}) as typeof fs.writeSync);

const WARN = 40;
const AS = 'https://www.w3.org/ns/activitystreams';
let ours: Instance;
let peer: StrictPeer;
let alice: TestUser;
let admin: TestUser;
// Keys made while our server starts: the peer's actors, and a key pair of an actor the peer does not serve.
let gus: string, stranger: string;
let ghostKey: RsaKeyPair;

beforeAll(async () => {
  // Logs at info, as in production, so that any warning the scenario causes is seen.
  const peerWithActors = async () => {
    const p = await startStrictPeer();
    [gus, stranger] = await Promise.all([p.addActor('gus'), p.addActor('stranger')]);
    return p;
  };
  [ours, peer, ghostKey] = await Promise.all([startHttpsInstance({ LOG_LEVEL: 'info', METRICS_TOKEN: 'scrape-token-0123456789' }), peerWithActors(), rsaKeyPair()]);
  const client = await createApp(ours.app, 'read write follow push admin:read');
  [alice, admin] = await Promise.all([registerUser(ours.app, client, 'alice', 'read write admin:read'), registerUser(ours.app, client, 'ozzie', 'read admin:read')]);
  // Made the Owner (the queues page and /metrics need view_devops) before its token is first used (the token cache would otherwise hold the old answer).
  await ours.ctx.db.query("UPDATE users SET role_id = (SELECT id FROM user_roles WHERE name = 'Owner') WHERE account_id = $1", [admin.id]);
}, 60_000);
afterAll(async () => {
  vi.restoreAllMocks();
  await Promise.all([ours?.close(), peer?.close()]);
});

/** Waits until the work that could still log or change something has run: Fedify's queue and the fan-out queue
 * (test/helpers/work-settled.ts). */
const quiet = () => until(() => workSettled(ours.ctx, { federation: true, outbox: 'none' }), (idle) => idle, 'the queues are empty');
const warnings = () => lines.filter((l) => typeof l.level === 'number' && l.level >= WARN);
const follow = (actor: string, n: number) => ({ '@context': AS, id: `${actor}/follows/${n}`, type: 'Follow', actor, object: `${ours.url}/users/alice` });
const metrics = async () => (await ours.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer scrape-token-0123456789' } })).body;
const followersOfAlice = async () => (await ours.app.inject({ method: 'GET', url: `/api/v1/accounts/${alice.id}/followers`, headers: bearer(alice.token) })).json() as { acct: string }[];

describe('a GoToSocial-like server follows us', () => {
  it('with unsigned fetches: the Follow is dropped with one warning naming the server and the 401, and counted', async () => {
    signedFetches(false);
    const before = warnings().length;
    expect(await peer.send('gus', `${ours.url}/users/alice/inbox`, follow(gus, 1))).toBe(202);
    // Its actor was asked for (unsigned, refused), and nothing came of the Follow.
    await until(async () => peer.gets.filter((g) => g.path === '/users/gus' && g.status === 401).length, (n) => n > 0, 'the unsigned GET');
    const dropped = await until(async () => warnings().slice(before), (w) => w.length > 0, 'a warning');
    await quiet(); // nothing else follows
    const fresh = warnings().slice(before);
    expect(fresh, JSON.stringify(fresh)).toHaveLength(1);
    expect(dropped[0]).toMatchObject({ part: 'inbox', server: peer.domain, activity: 'Follow', reason: 'actor_unavailable', status: 401 });
    expect(String(dropped[0]!.msg)).toContain(peer.domain);
    expect(String(dropped[0]!.msg)).toContain('401');
    expect(await followersOfAlice()).toEqual([]);

    await healthOf(ours.ctx).flush();
    const server = (await listServerHealth(ours.ctx.db)).find((s) => s.host === peer.domain);
    expect(server).toMatchObject({ dropped_inbound: 1, last_failure_kind: 'fetch', last_failure_status: 401 });
    expect(server!.last_drop_reason).toContain('401');
    expect(server!.fetch_failures).toBeGreaterThan(0);
    expect(server!.last_failure_detail).toContain('HTTP 401');
    expect(server!.last_failure_url).toBe(gus);
    const text = await metrics();
    expect(text).toMatch(/fedi_inbound_dropped_total\{reason="actor_unavailable"\} 1\b/);
    expect(text).toMatch(/fedi_inbound_activities_total\{type="Follow",outcome="dropped"\} 1\b/);
  });

  it('with signed fetches: the same Follow is taken, and nothing is logged above info', async () => {
    signedFetches(true);
    const before = warnings().length;
    expect(await peer.send('gus', `${ours.url}/users/alice/inbox`, follow(gus, 2))).toBe(202);
    await peer.waitFor((d) => d.activity.type === 'Accept');
    await until(followersOfAlice, (l) => l.length === 1, 'gus follows alice');
    await quiet();
    expect(warnings().slice(before)).toEqual([]);

    await healthOf(ours.ctx).flush();
    const server = (await listServerHealth(ours.ctx.db)).find((s) => s.host === peer.domain);
    expect(server!.last_fetch_at).not.toBeNull();
    expect(server!.last_delivery_at).not.toBeNull();
    expect(server!.signature_spec).toBe('draft-cavage-http-signatures-12');
    const text = await until(metrics, (t) => /fedi_deliveries_total\{outcome="delivered"\} [1-9]/.test(t), 'the Accept counted');
    expect(text).toMatch(/fedi_inbound_activities_total\{type="Follow",outcome="processed"\} 1\b/);
    expect(text).toMatch(/fedi_jobs_total\{queue="federation",outcome="completed"\} [1-9]/);
  });
});

describe('activities that cannot be verified or concern nobody here', () => {
  it('logs one warning for a signature whose key cannot be fetched, with the status, and counts it', async () => {
    const before = warnings().length;
    const ghost = `${peer.url}/users/ghost`;
    const { privateKey } = ghostKey;
    const request = new Request(`${ours.url}/inbox`, {
      method: 'POST', body: JSON.stringify(follow(ghost, 3)),
      headers: { 'content-type': 'application/activity+json', 'user-agent': peer.userAgent },
    });
    const res = await fetch(await signRequest(request, privateKey, new URL(`${ghost}/main-key`), { spec: 'draft-cavage-http-signatures-12' }));
    expect(res.status).toBe(401);
    await quiet();
    const fresh = warnings().slice(before);
    expect(fresh, JSON.stringify(fresh)).toHaveLength(1);
    expect(fresh[0]).toMatchObject({ server: peer.domain, activity: 'Follow', reason: 'signature', status: 404 });
    expect(String(fresh[0]!.msg)).toContain(`its signing key ${ghost}/main-key could not be fetched: HTTP 404`);
    expect(await metrics()).toMatch(/fedi_inbound_activities_total\{type="Follow",outcome="unverified"\} 1\b/);
  });

  it('logs a Create that concerns nobody here once, as not addressed', async () => {
    const before = warnings().length;
    const note = { '@context': AS, id: `${stranger}/statuses/1`, type: 'Note', attributedTo: stranger, content: '<p>spam</p>', to: [`${AS}#Public`] };
    expect(await peer.send('stranger', `${ours.url}/inbox`, { '@context': AS, id: `${stranger}/statuses/1/activity`, type: 'Create', actor: stranger, object: note, to: [`${AS}#Public`] })).toBe(202);
    const fresh = await until(async () => warnings().slice(before), (w) => w.length > 0, 'the warning');
    expect(fresh[0]).toMatchObject({ server: peer.domain, activity: 'Create', reason: 'not_addressed' });
    await quiet();
    expect(warnings().slice(before)).toHaveLength(1);
  });

  it("logs a boost from someone nobody here follows, of a post not ours, as not addressed; a boost of alice's post counts", async () => {
    // Counted (its warning is folded into the Create's above: one a server and reason at a time).
    const unaddressed = async () => Number(/fedi_inbound_dropped_total\{reason="not_addressed"\} (\d+)/.exec(await metrics())?.[1] ?? 0);
    const before = await unaddressed();
    // gus's post, boosted by the stranger: nobody here follows the stranger, and the post is not this server's.
    const announce = { '@context': AS, id: `${stranger}/statuses/2/activity`, type: 'Announce', actor: stranger, object: `${gus}/statuses/boosted`, to: [`${AS}#Public`] };
    expect(await peer.send('stranger', `${ours.url}/inbox`, announce)).toBe(202);
    await until(unaddressed, (n) => n === before + 1, 'the drop');
    expect(peer.gets.some((g) => g.path.endsWith('/statuses/boosted'))).toBe(false);
    const mine = (await ours.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(alice.token), payload: { status: 'boost me' } })).json();
    const boost = { '@context': AS, id: `${stranger}/statuses/3/activity`, type: 'Announce', actor: stranger, object: mine.uri, to: [`${AS}#Public`] };
    expect(await peer.send('stranger', `${ours.url}/inbox`, boost)).toBe(202);
    await until(async () => (await ours.app.inject({ method: 'GET', url: `/api/v1/statuses/${mine.id}`, headers: bearer(alice.token) })).json(), (st) => st.reblogs_count === 1, 'boosted');
  });
});

describe('browsers and the operators', () => {
  it('redirects a browser asking /users/:name for HTML without logging above info', async () => {
    const before = warnings().length;
    const res = await ours.app.inject({ method: 'GET', url: '/users/alice', headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toContain('/@alice');
    const head = await ours.app.inject({ method: 'HEAD', url: '/users/alice', headers: { accept: 'text/html' } });
    expect(head.statusCode).toBe(302);
    await new Promise((r) => setTimeout(r, 100));
    expect(warnings().slice(before)).toEqual([]);
  });

  it('shows the servers on the queue page, and /metrics only to the token or an administrator', async () => {
    await healthOf(ours.ctx).flush();
    const page = await ours.app.inject({ method: 'GET', url: '/admin/queues', headers: bearer(admin.token) });
    expect(page.statusCode).toBe(200);
    expect(page.json().servers.find((s: { host: string }) => s.host === peer.domain)).toMatchObject({ dropped_inbound: 4, signature_spec: 'draft-cavage-http-signatures-12' });

    expect((await ours.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    expect((await ours.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer wrong-token-0123456789' } })).statusCode).toBe(401);
    expect((await ours.app.inject({ method: 'GET', url: '/metrics', headers: bearer(alice.token) })).statusCode).toBe(403);
    const byAdmin = await ours.app.inject({ method: 'GET', url: '/metrics', headers: bearer(admin.token) });
    expect(byAdmin.statusCode).toBe(200);
    expect(byAdmin.headers['content-type']).toContain('text/plain');
    expect(byAdmin.body).toMatch(/fedi_http_requests_total\{method="GET",route="\/users\/:username",status="302"\} [1-9]/);
    expect(byAdmin.body).toMatch(/fedi_queue_jobs\{queue="fanout",state="waiting"\} \d+/);
    expect(byAdmin.body).toMatch(/fedi_queue_jobs\{queue="pull",state="waiting"\} \d+/);
    expect(byAdmin.body).toMatch(/fedi_home_page_cache_hit_ratio \d/);
  });
});

describe('deliveries that fail', () => {
  it('warns once per failing server, with why, however many attempts fail, and records it for the server', async () => {
    // gus's server moves away: its inboxes now point at a port nothing listens on.
    const port = await freePort();
    const dead = `localhost:${port}`;
    await ours.ctx.db.query('UPDATE accounts SET inbox_url = $1, shared_inbox_url = $2 WHERE uri = $3', [`https://${dead}/users/gus/inbox`, `https://${dead}/inbox`, peer.actorId('gus')]);
    const before = warnings().length;
    for (const text of ['first', 'second']) {
      const res = await ours.app.inject({ method: 'POST', url: '/api/v1/statuses', headers: bearer(alice.token), payload: { status: text } });
      expect(res.statusCode).toBe(200);
    }
    // Several attempts fail (two posts, retried every few hundred milliseconds here): one warning.
    await until(async () => { await healthOf(ours.ctx).flush(); return (await listServerHealth(ours.ctx.db)).find((s) => s.host === dead); }, (s) => (s?.delivery_failures ?? 0) >= 3, 'failed attempts');
    const fresh = warnings().slice(before);
    expect(fresh, JSON.stringify(fresh)).toHaveLength(1);
    expect(fresh[0]).toMatchObject({ part: 'outbox', server: dead });
    expect(String(fresh[0]!.msg)).toMatch(new RegExp(`^deliveries to ${dead} are failing \\(retried with backoff\\): connection failed`));
    const server = (await listServerHealth(ours.ctx.db)).find((s) => s.host === dead);
    expect(server).toMatchObject({ last_failure_kind: 'delivery', last_failure_status: null });
    expect(server!.last_failure_detail).toMatch(/^connection failed/);
    expect(await metrics()).toMatch(/fedi_deliveries_total\{outcome="failed"\} [1-9]/);
  });
});
