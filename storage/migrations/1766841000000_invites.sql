-- Up Migration
-- Invites (Mastodon's Invite): a code someone whose role may invite made, good for `max_uses` sign-ups (any number
-- when null) until `expires_at` (never when null); a sign-up through one may join while registrations are closed or
-- need approval, and follows its maker when `autofollow`. `users.invite_id` keeps which one a person joined with.
CREATE TABLE invites (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  code text NOT NULL UNIQUE,
  max_uses integer,
  uses integer NOT NULL DEFAULT 0,
  expires_at timestamptz,
  autofollow boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX invites_account ON invites (account_id, id DESC);
ALTER TABLE users ADD COLUMN invite_id bigint REFERENCES invites (id) ON DELETE SET NULL;

-- Down Migration
ALTER TABLE users DROP COLUMN invite_id;
DROP TABLE invites;
