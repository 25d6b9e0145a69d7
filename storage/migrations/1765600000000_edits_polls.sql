-- Up Migration
-- Edits (Mastodon's StatusEdit): each version of an edited status, the first one being the status as first posted.
CREATE TABLE status_edits (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  status_id bigint NOT NULL REFERENCES statuses (id) ON DELETE CASCADE,
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  text text NOT NULL DEFAULT '',
  content text NOT NULL DEFAULT '',
  spoiler_text text NOT NULL DEFAULT '',
  sensitive boolean NOT NULL DEFAULT false,
  -- The attachments of this version, in order, with their descriptions then.
  media_ids bigint[] NOT NULL DEFAULT '{}',
  media_descriptions text[] NOT NULL DEFAULT '{}',
  -- The poll's option titles at this version (null: no poll).
  poll_options text[],
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX status_edits_status ON status_edits (status_id, id);

-- Polls (Mastodon's Poll): one per status at most. A remote poll's counts are its server's, as last received.
CREATE TABLE polls (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  status_id bigint NOT NULL UNIQUE REFERENCES statuses (id) ON DELETE CASCADE,
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  options text[] NOT NULL,
  -- Per option; kept by votes here for local polls, taken from the Question for remote ones.
  cached_tallies integer[] NOT NULL,
  multiple boolean NOT NULL DEFAULT false,
  hide_totals boolean NOT NULL DEFAULT false,
  votes_count integer NOT NULL DEFAULT 0,
  voters_count integer,
  expires_at timestamptz,
  -- When its end was handled (voters and author notified, the final Update sent): local polls only.
  ended_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (cardinality(options) BETWEEN 1 AND 32 AND cardinality(cached_tallies) = cardinality(options))
);
CREATE INDEX polls_account ON polls (account_id);

CREATE TABLE poll_votes (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  poll_id bigint NOT NULL REFERENCES polls (id) ON DELETE CASCADE,
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  choice integer NOT NULL CHECK (choice >= 0),
  -- A remote voter's Note id; for our votes on remote polls, the id of the Note we sent.
  uri text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (poll_id, account_id, choice)
);
CREATE INDEX poll_votes_account ON poll_votes (account_id, poll_id);
CREATE UNIQUE INDEX poll_votes_uri ON poll_votes (uri) WHERE uri IS NOT NULL;

-- Down Migration
DROP TABLE poll_votes;
DROP TABLE polls;
DROP TABLE status_edits;
