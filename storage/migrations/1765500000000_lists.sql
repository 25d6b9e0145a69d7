-- Up Migration
-- Lists (Mastodon's List and ListAccount): a person's named sets of accounts they follow, each with a feed of its own.
CREATE TABLE lists (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  title text NOT NULL,
  replies_policy text NOT NULL DEFAULT 'list' CHECK (replies_policy IN ('followed', 'list', 'none')),
  -- Members' posts are kept out of the owner's home timeline.
  exclusive boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX lists_account ON lists (account_id, id);

-- A member is someone the owner follows: when the follow ends, so does the membership (as in Mastodon).
CREATE TABLE list_accounts (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  list_id bigint NOT NULL REFERENCES lists (id) ON DELETE CASCADE,
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  follow_id bigint NOT NULL REFERENCES follows (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (list_id, account_id)
);
-- Fan-out finds the lists an author is in; a list's members page by id.
CREATE INDEX list_accounts_account ON list_accounts (account_id, list_id);
CREATE INDEX list_accounts_list ON list_accounts (list_id, id);
CREATE INDEX list_accounts_follow ON list_accounts (follow_id);

-- Down Migration
DROP TABLE list_accounts;
DROP TABLE lists;
