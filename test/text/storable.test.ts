// The rule for text PostgreSQL cannot store, on its own: such text found and removed without recursion.
import { describe, expect, it } from 'vitest';
import { findUnstorable, isStorable, makeStorable, storable } from '../../text/storable.ts';
import { jsonNesting, valueNesting } from '../../federation/inbound-limits.ts';
import { deep } from '../helpers/fuzz-values.ts';

describe('text/storable.ts', () => {
  it('tells NUL and unpaired surrogates from everything else', () => {
    for (const ok of ['', 'plain', '🦣 e\u0301 \ufffd', '\u202e', '%00', '\\u0000']) expect(isStorable(ok), ok).toBe(true);
    for (const bad of ['\0', 'a\0b', '\ud800', 'x\udfffy', '\udc00\ud800']) expect(isStorable(bad), JSON.stringify(bad)).toBe(false);
    expect(storable('a\0b\ud800c🦣')).toBe('ab\ufffdc🦣');
  });

  it('names where the first one is, keys included', () => {
    expect(findUnstorable({ status: 'ok', poll: { options: ['a', 'b\0'] } })).toBe('poll.options.1');
    expect(findUnstorable({ ['na\0me']: 'v' })).toBe('name');
    expect(findUnstorable('\ud800')).toBe('');
    expect(findUnstorable({ a: [1, true, null, 'fine'] })).toBeNull();
    expect(findUnstorable(deep(100_000, 'array'))).toBeNull(); // deeper than the call stack
  });

  it('makes a parsed document storable in place, and says whether it changed it', () => {
    const doc: Record<string, unknown> = { content: 'a\0b', contentMap: { ['e\0n']: 'x\ud800' }, tag: [{ name: '#ok' }] };
    expect(makeStorable(doc)).toBe(true);
    expect(doc).toEqual({ content: 'ab', contentMap: { en: 'x\ufffd' }, tag: [{ name: '#ok' }] });
    expect(makeStorable(doc)).toBe(false);
    expect(makeStorable(deep(100_000, 'object'))).toBe(false);
  });
});

describe('federation/inbound-limits.ts nesting', () => {
  it('measures JSON text without parsing it, ignoring brackets inside strings', () => {
    expect(jsonNesting(Buffer.from('{"a":[{"b":"[[[{{{\\"]]]"}]}'))).toBe(3);
    expect(jsonNesting(Buffer.from('['.repeat(5000) + ']'.repeat(5000)))).toBe(5000);
    expect(valueNesting({ a: [{ b: 1 }] })).toBe(3);
    expect(valueNesting(deep(100_000, 'object'))).toBeGreaterThan(64); // stops counting past the limit
  });
});
