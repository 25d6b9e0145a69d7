-- Up Migration
-- What a person shuts out (Mastodon's Block, Mute and AccountDomainBlock). Lists page by id; the reverse indexes
-- answer "who blocks me" for relationships and for what a viewer may see.
CREATE TABLE blocks (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  target_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  -- The ActivityPub id of the Block: ours for a local blocker, the remote server's for theirs (for Undo by id).
  uri text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, target_account_id),
  CHECK (account_id <> target_account_id)
);
CREATE INDEX blocks_account ON blocks (account_id, id);
CREATE INDEX blocks_target ON blocks (target_account_id, id);
CREATE INDEX blocks_uri ON blocks (uri) WHERE uri IS NOT NULL;

CREATE TABLE mutes (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  target_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  hide_notifications boolean NOT NULL DEFAULT true,
  -- A timed mute ends by itself: rows past this are treated as absent everywhere, and removed when next touched.
  expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, target_account_id),
  CHECK (account_id <> target_account_id)
);
CREATE INDEX mutes_account ON mutes (account_id, id);

CREATE TABLE account_domain_blocks (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  domain text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, domain)
);
CREATE INDEX account_domain_blocks_account ON account_domain_blocks (account_id, id);

-- Down Migration
DROP TABLE account_domain_blocks;
DROP TABLE mutes;
DROP TABLE blocks;
