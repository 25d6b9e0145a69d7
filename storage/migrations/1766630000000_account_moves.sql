-- Up Migration
-- Account moves: the actor ids an account says are also it (ActivityPub alsoKnownAs; for a local account
-- what its owner entered on /settings/migration, for a remote one what its actor document says), and the account it
-- moved to (set by our own move, or by a Move received and verified).
ALTER TABLE accounts
  ADD COLUMN IF NOT EXISTS also_known_as text[] NOT NULL DEFAULT '{}',
  ADD COLUMN IF NOT EXISTS moved_to_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  ADD COLUMN IF NOT EXISTS moved_at timestamptz;
-- Who moved to an account (an account deleted sets theirs to null through this index).
CREATE INDEX IF NOT EXISTS accounts_moved_to ON accounts (moved_to_account_id) WHERE moved_to_account_id IS NOT NULL;

-- Each move a local account made, as Mastodon's account_migrations: the 30-day cooldown is counted from these.
CREATE TABLE account_migrations (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  target_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  acct text NOT NULL,
  followers_count integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX account_migrations_account ON account_migrations (account_id, created_at DESC);

-- Down Migration
DROP TABLE account_migrations;
DROP INDEX IF EXISTS accounts_moved_to;
ALTER TABLE accounts DROP COLUMN moved_at, DROP COLUMN moved_to_account_id, DROP COLUMN also_known_as;
