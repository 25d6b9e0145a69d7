import type { UserRow } from '../../storage/users.ts';

/**
 * Mastodon's Preferences: the posting defaults a user keeps (`source` in update_credentials). Reading preferences
 * are not stored here: Mastodon's defaults (media shown as marked, warnings collapsed).
 */
export function renderPreferences(u: UserRow) {
  return {
    'posting:default:visibility': u.default_privacy,
    'posting:default:sensitive': u.default_sensitive,
    'posting:default:language': u.default_language,
    'posting:default:quote_policy': u.default_quote_policy ?? 'public',
    'reading:expand:media': 'default',
    'reading:expand:spoilers': false,
  };
}
