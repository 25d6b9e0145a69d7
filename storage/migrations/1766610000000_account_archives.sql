-- Up Migration
-- Archives of one's own posts and media (Mastodon's Backup), asked for on /settings/export. The row is written with
-- the outbox row of its job in one transaction; the job streams the zip to the file host in parts of a few MB
-- (`key_prefix`/part-000000, …), counting them in `parts` as they are stored, so that a retry or the expiry can
-- remove every part. `ready_at` is set when the last part is stored; the archive is offered until `expires_at`.
CREATE TABLE account_archives (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  key_prefix text,
  parts integer NOT NULL DEFAULT 0,
  size_bytes bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  ready_at timestamptz,
  expires_at timestamptz
);
-- The page's list and the once-a-week rule, newest first.
CREATE INDEX account_archives_account ON account_archives (account_id, id);
-- The sweep of expired archives, and of requests never made into one.
CREATE INDEX account_archives_expires ON account_archives (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX account_archives_unmade ON account_archives (created_at) WHERE ready_at IS NULL;

-- Down Migration
DROP TABLE account_archives;
