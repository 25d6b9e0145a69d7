-- Up Migration
-- A person's private note on another account (Mastodon's AccountNote), shown only to them in relationships.
CREATE TABLE account_notes (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  target_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  comment text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, target_account_id)
);

-- Accounts a person features on their profile (Mastodon's AccountPin, "endorsements"); only ones they follow.
CREATE TABLE account_endorsements (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  target_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, target_account_id),
  CHECK (account_id <> target_account_id)
);
CREATE INDEX account_endorsements_account ON account_endorsements (account_id, id);

-- Down Migration
DROP TABLE account_endorsements;
DROP TABLE account_notes;
