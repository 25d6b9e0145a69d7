-- Up Migration
-- Follow suggestions (GET /api/v2/suggestions) and account search (GET /api/v1/accounts/search).

-- Accounts the operator features (`npm run cli -- suggestions feature NAME`), Mastodon's "staff picks".
CREATE TABLE featured_suggestions (
  account_id bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX featured_suggestions_created ON featured_suggestions (created_at, account_id);

-- Suggestions a user has dismissed (DELETE /api/v1/suggestions/:id): never suggested to them again.
CREATE TABLE suggestion_dismissals (
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  target_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, target_account_id)
);
CREATE INDEX suggestion_dismissals_target ON suggestion_dismissals (target_account_id);

-- most_followed: local, discoverable accounts by follower count, read from the top.
CREATE INDEX accounts_local_most_followed ON accounts (followers_count DESC, id)
  WHERE domain IS NULL AND suspended_at IS NULL AND discoverable;
-- most_interactions: the latest reblogs, newest first (favourites are read by their primary key).
CREATE INDEX statuses_reblogs_recent ON statuses (id DESC) WHERE reblog_of_id IS NOT NULL AND deleted_at IS NULL;
-- Account search by words of the display name, prefix-matched (`'ali':*`).
CREATE INDEX accounts_display_name_words ON accounts USING gin (to_tsvector('simple', display_name));

-- Down Migration
DROP INDEX accounts_display_name_words;
DROP INDEX statuses_reblogs_recent;
DROP INDEX accounts_local_most_followed;
DROP TABLE suggestion_dismissals;
DROP TABLE featured_suggestions;
