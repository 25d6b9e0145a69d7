-- Up Migration
-- Copies of other servers' files (attachments, avatars, headers, emoji) on our file host, so that no reader's app
-- loads anything from another server. The owning row keeps the key it renders (media_attachments.original_key,
-- accounts.avatar_file, …); this table is the ledger of what was copied, when, from where and how large, so copies
-- can be counted and pruned by age, and replaced ones found.
CREATE TABLE cached_files (
  key text PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('attachment', 'avatar', 'header', 'emoji')),
  owner_id bigint NOT NULL,
  source_url text NOT NULL,
  bytes bigint NOT NULL,
  cached_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cached_files_owner ON cached_files (kind, owner_id);
CREATE INDEX cached_files_age ON cached_files (cached_at, key);

-- Down Migration
DROP TABLE cached_files;
