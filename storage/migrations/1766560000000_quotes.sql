-- Up Migration
-- Quote posts (Mastodon 4.5): one quote per quoting status, its state as the quoted author decided (local authors:
-- accepted at once when their policy allows it). activity_uri / approval_uri are for federation (a later slice).
CREATE TABLE quotes (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  status_id bigint NOT NULL REFERENCES statuses (id) ON DELETE CASCADE,
  quoted_status_id bigint REFERENCES statuses (id) ON DELETE SET NULL,
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  quoted_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'accepted', 'rejected', 'revoked')),
  activity_uri text,
  approval_uri text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT quotes_status UNIQUE (status_id)
);
-- The quotes of a status, newest first, paged by id (GET /api/v1/statuses/:id/quotes).
CREATE INDEX quotes_quoted_status ON quotes (quoted_status_id, id DESC);
CREATE UNIQUE INDEX quotes_activity_uri ON quotes (activity_uri) WHERE activity_uri IS NOT NULL;

-- Who may quote a status: 'public', 'followers' or 'nobody' (Mastodon's quote_approval_policy, as its API names it).
ALTER TABLE statuses
  ADD COLUMN quote_approval_policy text NOT NULL DEFAULT 'public',
  ADD COLUMN quotes_count integer NOT NULL DEFAULT 0;
-- The default for new posts (source[quote_policy], posting:default:quote_policy).
ALTER TABLE users ADD COLUMN default_quote_policy text NOT NULL DEFAULT 'public'
  CHECK (default_quote_policy IN ('public', 'followers', 'nobody'));

-- Down Migration
ALTER TABLE users DROP COLUMN default_quote_policy;
ALTER TABLE statuses DROP COLUMN quotes_count, DROP COLUMN quote_approval_policy;
DROP TABLE quotes;
