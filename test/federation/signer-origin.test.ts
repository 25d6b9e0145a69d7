import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { signerMaySpeakFor } from '../../federation/signer-origin.ts';
import { parsedActivity } from '../../federation/inbound-limits.ts';

// Fedify trusts the owner a fetched key document names, so a key served by one server could claim another server's
// actor: such a POST is refused before Fedify, unless the activity carries its own signature from the actor's host.
const signed = (keyId: string) => ({ signature: `keyId="${keyId}",algorithm="rsa-sha256",headers="(request-target) host date",signature="x"` });
const body = (doc: object) => parsedActivity(Buffer.from(JSON.stringify(doc)));
const forged = { '@context': 'https://www.w3.org/ns/activitystreams', id: 'https://victim.example/users/alice#delete', type: 'Delete', actor: 'https://victim.example/users/alice', object: 'https://victim.example/users/alice' };

describe('who may sign for an actor', () => {
  it('takes a key on the actor\'s host, and refuses one elsewhere without the actor\'s own signature', () => {
    expect(signerMaySpeakFor(signed('https://victim.example/users/alice#main-key'), body(forged))).toBe(true);
    expect(signerMaySpeakFor(signed('https://VICTIM.example/users/alice#main-key'), body(forged))).toBe(true);
    expect(signerMaySpeakFor(signed('https://evil.example/k'), body(forged))).toBe(false);
    expect(signerMaySpeakFor(signed('https://evil.example/k'), body({ ...forged, actor: { id: forged.actor } }))).toBe(false);
    // A forwarded activity: the forwarder's HTTP signature, the author's Linked Data signature or proof.
    expect(signerMaySpeakFor(signed('https://relay.example/actor#main-key'), body({ ...forged, signature: { type: 'RsaSignature2017', creator: 'https://victim.example/users/alice#main-key' } }))).toBe(true);
    expect(signerMaySpeakFor(signed('https://relay.example/actor#main-key'), body({ ...forged, proof: { type: 'DataIntegrityProof', verificationMethod: 'https://victim.example/users/alice#ed25519-key' } }))).toBe(true);
    expect(signerMaySpeakFor(signed('https://relay.example/actor#main-key'), body({ ...forged, signature: { creator: 'https://evil.example/k' } }))).toBe(false);
    // Unsigned or not JSON: Fedify's to answer.
    expect(signerMaySpeakFor({}, body(forged))).toBe(true);
    expect(signerMaySpeakFor(signed('https://evil.example/k'), parsedActivity(Buffer.from('not json')))).toBe(true);
  });

  describe('at the inbox', () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer();
    });
    afterAll(async () => s?.close());

    it('answers 401 before anything is fetched', async () => {
      const res = await s.app.inject({
        method: 'POST', url: '/inbox', payload: Buffer.from(JSON.stringify(forged)),
        headers: { ...signed('https://evil.example/k'), 'content-type': 'application/activity+json', date: new Date().toUTCString() },
      });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'Signature verification failed' });
    });
  });
});
