-- Up Migration
-- Usernames nobody may sign up with, or only with the operators' approval (Mastodon 4.5's username_blocks). A block
-- matches a name equal to it (`exact`) or containing it, both compared in the normalised form of
-- services/username-blocks.ts (lower case, digits read as the letters they stand for: `4dm1n` is `admin`), kept in
-- `normalized_username`. One block per name, whatever its case.
CREATE TABLE username_blocks (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  username text NOT NULL CHECK (length(username) BETWEEN 1 AND 30),
  normalized_username text NOT NULL CHECK (normalized_username <> ''),
  exact boolean NOT NULL DEFAULT false,
  allow_with_approval boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX username_blocks_username ON username_blocks (lower(username));

-- Down Migration
DROP TABLE username_blocks;
