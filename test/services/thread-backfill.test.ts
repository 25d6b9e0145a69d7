import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.ts';
import { shouldFetchReplies } from '../../services/thread-backfill.ts';
import type { StatusRow } from '../../storage/statuses.ts';

// When opening a thread fetches its replies, apart from the cooldown (which the storage claim decides): Mastodon's
// Status#should_fetch_replies?, with its settings' names and defaults.
const now = Date.parse('2026-12-06T12:00:00Z');
const remote = (changes: Partial<StatusRow> = {}): StatusRow => ({
  id: '1', account_id: '2', uri: 'https://remote.example/statuses/1', url: null, text: '', content: '<p>hi</p>', spoiler_text: '',
  sensitive: false, visibility: 'public', language: null, in_reply_to_id: null, in_reply_to_account_id: null, reblog_of_id: null,
  application_id: null, replies_count: 0, reblogs_count: 0, favourites_count: 0, deleted_at: null, edited_at: null,
  created_at: new Date(now - 6 * 60_000), ...changes,
});

describe('shouldFetchReplies', () => {
  const config = loadConfig({});

  it('reads Mastodon\'s FETCH_REPLIES_* settings with Mastodon\'s defaults', () => {
    expect(config.fetchReplies).toEqual({ enabled: true, maxGlobal: 1000, maxSingle: 500, maxPages: 500, cooldownMinutes: 15, initialWaitMinutes: 5 });
    expect(loadConfig({ FETCH_REPLIES_ENABLED: 'false', FETCH_REPLIES_MAX_PAGES: '3', FETCH_REPLIES_COOLDOWN_MINUTES: '1' }).fetchReplies)
      .toMatchObject({ enabled: false, maxPages: 3, cooldownMinutes: 1 });
    expect(() => loadConfig({ FETCH_REPLIES_MAX_GLOBAL: '0' })).toThrow(/FETCH_REPLIES_MAX_GLOBAL/);
    expect(() => loadConfig({ FETCH_REPLIES_ENABLED: 'sometimes' })).toThrow(/FETCH_REPLIES_ENABLED/);
  });

  it('takes a remote public or unlisted post older than the initial wait', () => {
    expect(shouldFetchReplies(config, remote(), now)).toBe(true);
    expect(shouldFetchReplies(config, remote({ visibility: 'unlisted' }), now)).toBe(true);
  });

  it('leaves local, private, direct, deleted, reblogged and new posts alone, and all of them when disabled', () => {
    expect(shouldFetchReplies(config, remote({ uri: null }), now)).toBe(false);
    expect(shouldFetchReplies(config, remote({ visibility: 'private' }), now)).toBe(false);
    expect(shouldFetchReplies(config, remote({ visibility: 'direct' }), now)).toBe(false);
    expect(shouldFetchReplies(config, remote({ deleted_at: new Date(now) }), now)).toBe(false);
    expect(shouldFetchReplies(config, remote({ reblog_of_id: '3' }), now)).toBe(false);
    expect(shouldFetchReplies(config, remote({ created_at: new Date(now - 4 * 60_000) }), now)).toBe(false);
    expect(shouldFetchReplies(loadConfig({ FETCH_REPLIES_INITIAL_WAIT_MINUTES: '0' }), remote({ created_at: new Date(now) }), now)).toBe(true);
    expect(shouldFetchReplies(loadConfig({ FETCH_REPLIES_ENABLED: 'false' }), remote(), now)).toBe(false);
  });
});
