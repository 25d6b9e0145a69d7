-- Up Migration

-- Moderation of accounts (Mastodon's Admin::AccountAction): suspended_at exists already.
ALTER TABLE accounts
  ADD COLUMN silenced_at timestamptz,   -- limited: kept out of public timelines
  ADD COLUMN sensitized_at timestamptz; -- its media always shown as sensitive
ALTER TABLE users ADD COLUMN disabled boolean NOT NULL DEFAULT false; -- cannot sign in, tokens refused

-- The admin account list pages by id under these filters: partial indexes keep each filter a short walk.
CREATE INDEX accounts_suspended ON accounts (id) WHERE suspended_at IS NOT NULL;
CREATE INDEX accounts_silenced ON accounts (id) WHERE silenced_at IS NOT NULL;
CREATE INDEX accounts_sensitized ON accounts (id) WHERE sensitized_at IS NOT NULL;
CREATE INDEX accounts_local ON accounts (id) WHERE domain IS NULL;
CREATE INDEX accounts_by_domain ON accounts (lower(domain), id) WHERE domain IS NOT NULL;
CREATE INDEX users_disabled ON users (account_id) WHERE disabled;
CREATE INDEX users_pending ON users (account_id) WHERE NOT approved;
CREATE INDEX users_admin ON users (account_id) WHERE admin;

CREATE TABLE reports (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,        -- who reported (a remote actor for a Flag)
  target_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE, -- who is reported
  status_ids bigint[] NOT NULL DEFAULT '{}',
  rule_ids bigint[] NOT NULL DEFAULT '{}',
  comment text NOT NULL DEFAULT '',
  category text NOT NULL DEFAULT 'other' CHECK (category IN ('spam', 'legal', 'violation', 'other')),
  forwarded boolean NOT NULL DEFAULT false,
  uri text,                                                                     -- the Flag's id, received or sent
  assigned_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  action_taken_at timestamptz,
  action_taken_by_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX reports_uri ON reports (uri) WHERE uri IS NOT NULL;
CREATE INDEX reports_unresolved ON reports (id) WHERE action_taken_at IS NULL;
CREATE INDEX reports_resolved ON reports (id) WHERE action_taken_at IS NOT NULL;
CREATE INDEX reports_account ON reports (account_id, id);
CREATE INDEX reports_target ON reports (target_account_id, id);

-- Down Migration
DROP TABLE reports;
DROP INDEX users_admin;
DROP INDEX users_pending;
DROP INDEX users_disabled;
ALTER TABLE users DROP COLUMN disabled;
DROP INDEX accounts_by_domain;
DROP INDEX accounts_local;
DROP INDEX accounts_sensitized;
DROP INDEX accounts_silenced;
DROP INDEX accounts_suspended;
ALTER TABLE accounts DROP COLUMN sensitized_at, DROP COLUMN silenced_at;
