import { describe, expect, it } from 'vitest';
import { EmojiReact, Undo } from '@fedify/vocab';
import { defineUndeclaredTypes } from '../../federation/sender-terms.ts';

// The definitions an activity's context lacks, added before Fedify reads it (the delivery itself is tested through
// the strict peer in test/e2e/emoji-federation.test.ts).
const AS = 'https://www.w3.org/ns/activitystreams';
const snacReact = () => ({
  '@context': AS, type: 'EmojiReact', id: 'https://snac.example/carol/e/1', actor: 'https://snac.example/carol',
  object: 'https://ours.example/users/alice/statuses/1', content: '⭐', accounts: ['https://snac.example/carol'], tag: [],
});

describe('defineUndeclaredTypes', () => {
  it("makes snac's EmojiReact and its Undo, under ActivityStreams' context alone, read as EmojiReact", async () => {
    const react = snacReact();
    expect(defineUndeclaredTypes(react)).toBe(true);
    expect(await EmojiReact.fromJsonLd(react)).toBeInstanceOf(EmojiReact);
    const undo = { '@context': AS, type: 'Undo', id: 'https://snac.example/carol/e/1/Undo_1', actor: 'https://snac.example/carol', object: snacReact() };
    expect(defineUndeclaredTypes(undo)).toBe(true);
    const parsed = await Undo.fromJsonLd(undo);
    expect(await parsed.getObject()).toBeInstanceOf(EmojiReact);
  });

  it('leaves contexts that define the type, other types, and activities signed in their body as sent', () => {
    for (const activity of [
      { ...snacReact(), '@context': [AS, 'http://litepub.social/ns'] },
      { ...snacReact(), '@context': [AS, { EmojiReact: 'litepub:EmojiReact', litepub: 'http://litepub.social/ns#' }] },
      { ...snacReact(), type: 'Like' },
      { ...snacReact(), signature: { type: 'RsaSignature2017', signatureValue: 'x' } },
      { ...snacReact(), proof: { type: 'DataIntegrityProof' } },
    ]) {
      const before = JSON.stringify(activity);
      expect(defineUndeclaredTypes(activity)).toBe(false);
      expect(JSON.stringify(activity)).toBe(before);
    }
    expect(defineUndeclaredTypes('not an object')).toBe(false);
  });
});
