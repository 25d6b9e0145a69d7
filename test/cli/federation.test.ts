import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/listen.ts';
import { startHttpsInstance, type Instance } from '../helpers/instances.ts';
import { registerUsers } from '../helpers/oauth.ts';
import { startStrictPeer, type StrictPeer } from '../helpers/strict-peer.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { healthOf } from '../../federation/health.ts';
import type { Config } from '../../config.ts';

// `federation check` from our server against another of ours (serves unsigned GETs) and a GoToSocial-like peer
// (401 to unsigned GETs), and `federation servers`.
let ours: Instance;
let other: Instance;
let peer: StrictPeer;
const AS = 'https://www.w3.org/ns/activitystreams';

beforeAll(async () => {
  [ours, other, peer] = await Promise.all([startHttpsInstance(), startHttpsInstance(), startStrictPeer()]);
  await registerUsers(other.app, 'alice');
  await peer.addActor('gus');
  // A document whose @context is no context at all: JSON, but not JSON-LD anyone can read.
  peer.publishAt('/users/gus/statuses/2', { '@context': 5, id: `${peer.url}/users/gus/statuses/2`, type: 'Note' });
  peer.publish('gus', { '@context': AS, id: `${peer.url}/users/gus/statuses/1`, type: 'Note', attributedTo: peer.actorId('gus'), content: '<p>hi</p>', to: [`${AS}#Public`] });
}, 60_000);
afterAll(async () => {
  await Promise.all([ours?.close(), other?.close(), peer?.close()]);
});

async function cli(args: string[], config: Config = ours.config): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, ours.ctx.db, (l) => lines.push(l), (what) => publishTokenInvalidation(ours.ctx.redis, config.redisPrefix, what), { redis: ours.ctx.redis, redisPrefix: config.redisPrefix, config });
  return lines;
}

describe('federation check', () => {
  it('finds a reachable actor by its handle: WebFinger, unsigned and signed GETs, its keys', async () => {
    const out = await cli(['federation', 'check', `alice@${other.domain}`]);
    const text = out.join('\n');
    expect(text).toContain(`ok    webfinger: acct:alice@${other.domain} -> ${other.url}/users/alice`);
    expect(text).toContain('ok    actor unsigned GET: HTTP 200');
    expect(text).toMatch(/ok {4}actor signed GET: HTTP 200, signed draft-cavage-http-signatures-12 as https:\/\/localhost:\d+\/users\/instance\.actor/);
    expect(text).toContain(`ok    actor document: Person ${other.url}/users/alice`);
    expect(text).toMatch(new RegExp(`ok {4}key: ${other.url}/users/alice#main-key \\(RSASSA-PKCS1-v1_5, HTTP Signatures\\), owner matches`));
    expect(text).toContain('(Multikey, Object Integrity Proofs), controller matches');
    expect(text).toContain(`ok    inbox: ${other.url}/users/alice/inbox (shared: ${other.url}/inbox)`);
    expect(out.at(-1)).toBe('result: reachable, signed and unsigned');
  });

  it('says when a server answers 401 to unsigned GETs, and that signed ones work', async () => {
    const out = await cli(['federation', 'check', `gus@${peer.domain}`]);
    const text = out.join('\n');
    expect(text).toContain('FAIL  actor unsigned GET: HTTP 401 on unsigned GET: the server refuses unsigned fetches (authorized fetch)');
    expect(text).toContain('ok    actor signed GET: HTTP 200, signed draft-cavage-http-signatures-12');
    expect(text).toContain(`ok    key: ${peer.keyId('gus')}`);
    expect(out.at(-1)).toBe('result: reachable with signed fetches only (HTTP 401 on unsigned GET)');
    // Only GETs went out: the peer received nothing.
    expect(peer.received).toEqual([]);
  });

  it('checks a post by its URL, and its author', async () => {
    const out = await cli(['federation', 'check', `${peer.url}/users/gus/statuses/1`]);
    const text = out.join('\n');
    expect(text).toContain('FAIL  object unsigned GET: HTTP 401');
    expect(text).toContain(`ok    object document: Note ${peer.url}/users/gus/statuses/1`);
    expect(text).toContain(`ok    author document: Person ${peer.actorId('gus')}`);
    expect(text).toContain(`ok    key: ${peer.keyId('gus')}`);
  });

  it('names what failed: an unknown handle, a missing post, DNS, and the private-address guard', async () => {
    const unknown = await cli(['federation', 'check', `nobody@${peer.domain}`]);
    expect(unknown).toEqual([`FAIL  webfinger: no account acct:nobody@${peer.domain} on ${peer.domain} (HTTP 404)`, `result: FAILED at webfinger: no account acct:nobody@${peer.domain} on ${peer.domain} (HTTP 404)`]);

    const missing = (await cli(['federation', 'check', `${peer.url}/users/gus/statuses/404`])).join('\n');
    expect(missing).toContain('FAIL  object signed GET: draft-cavage-http-signatures-12: HTTP 404');
    expect(missing).toMatch(/result: FAILED at object signed GET/);

    const badLd = (await cli(['federation', 'check', `${peer.url}/users/gus/statuses/2`])).join('\n');
    expect(badLd).toContain('ok    object signed GET: HTTP 200');
    expect(badLd).toMatch(/FAIL {2}object document: bad JSON-LD: /);
    expect(badLd).toMatch(/result: FAILED at object document: bad JSON-LD/);

    const dns = await cli(['federation', 'check', 'someone@no-such-host.invalid']);
    expect(dns[0]).toMatch(/^FAIL {2}webfinger: https:\/\/no-such-host\.invalid\/\.well-known\/webfinger\?resource=acct%3Asomeone%40no-such-host\.invalid: DNS: /);

    // A server that does not speak TLS where https is expected.
    const port = await freePort();
    const plain = createServer((_req, res) => res.end('plain http')).listen(port, '127.0.0.1');
    try {
      const tls = await cli(['federation', 'check', `https://127.0.0.1:${port}/users/x`]);
      expect(tls[0]).toMatch(new RegExp(`^FAIL {2}object GET: https://127\\.0\\.0\\.1:${port}/users/x: TLS: `));
    } finally {
      plain.close();
    }

    const guarded = await cli(['federation', 'check', `gus@${peer.domain}`], { ...ours.config, allowPrivateAddresses: false });
    expect(guarded[0]).toContain(`FAIL  webfinger: https://${peer.domain}/.well-known/webfinger?resource=acct%3Agus%40${encodeURIComponent(peer.domain)}: refused: ${peer.domain} is a loopback or private address`);
  }, 30_000);

  it('refuses bad arguments with the usage', async () => {
    await expect(cli(['federation', 'check'])).rejects.toThrow(/one handle/);
    await expect(cli(['federation', 'nothing'])).rejects.toThrow(/unknown command: federation nothing/);
  });
});

describe('federation servers', () => {
  it('lists the servers we talked to, with their health', async () => {
    // Our server follows gus through search: signed fetches of the peer's actor, recorded for the peer.
    const [bob] = await registerUsers(ours.app, 'bob');
    const found = await ours.app.inject({ method: 'GET', url: `/api/v2/search?q=${encodeURIComponent(`@gus@${peer.domain}`)}&resolve=true`, headers: { authorization: `Bearer ${bob.token}` } });
    expect(found.json().accounts).toHaveLength(1);
    await healthOf(ours.ctx).flush();
    const out = await cli(['federation', 'servers']);
    const start = out.indexOf(peer.domain);
    expect(start).toBeGreaterThanOrEqual(0);
    expect(out[start + 2]).toMatch(/^ {2}fetched: [1-9]\d* \(last \d{4}-\d\d-\d\dT[\d:]+Z\), failed: 0$/);
    expect(out[start + 4]).toBe('  signature spec: draft-cavage-http-signatures-12');
  });
});
