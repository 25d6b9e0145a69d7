-- Up Migration

CREATE TABLE statuses (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  uri text,                                 -- ActivityPub id (remote statuses); local ones derive it
  url text,
  text text NOT NULL DEFAULT '',            -- what the author typed
  content text NOT NULL DEFAULT '',         -- rendered, sanitised HTML
  spoiler_text text NOT NULL DEFAULT '',
  sensitive boolean NOT NULL DEFAULT false,
  visibility text NOT NULL CHECK (visibility IN ('public', 'unlisted', 'private', 'direct')),
  language text,
  in_reply_to_id bigint REFERENCES statuses (id) ON DELETE SET NULL,
  in_reply_to_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  reblog_of_id bigint REFERENCES statuses (id) ON DELETE CASCADE,
  application_id bigint REFERENCES oauth_applications (id) ON DELETE SET NULL,
  replies_count integer NOT NULL DEFAULT 0,
  reblogs_count integer NOT NULL DEFAULT 0,
  favourites_count integer NOT NULL DEFAULT 0,
  deleted_at timestamptz,                   -- internal: never rendered, never sent
  edited_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- An account's statuses, newest first (profile, home-feed rebuilds).
CREATE INDEX statuses_account ON statuses (account_id, id DESC) WHERE deleted_at IS NULL;
-- The public timelines.
CREATE INDEX statuses_public ON statuses (id DESC) WHERE deleted_at IS NULL AND visibility = 'public' AND reblog_of_id IS NULL;
CREATE INDEX statuses_replies ON statuses (in_reply_to_id, id) WHERE in_reply_to_id IS NOT NULL;
CREATE INDEX statuses_reblogs ON statuses (reblog_of_id, id) WHERE reblog_of_id IS NOT NULL;
-- One live reblog of a status per account.
CREATE UNIQUE INDEX statuses_one_reblog ON statuses (account_id, reblog_of_id) WHERE reblog_of_id IS NOT NULL AND deleted_at IS NULL;
CREATE UNIQUE INDEX statuses_uri ON statuses (uri) WHERE uri IS NOT NULL;

CREATE TABLE mentions (
  status_id bigint NOT NULL REFERENCES statuses (id) ON DELETE CASCADE,
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  PRIMARY KEY (status_id, account_id)
);
CREATE INDEX mentions_account ON mentions (account_id, status_id);

CREATE TABLE tags (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX tags_name ON tags (lower(name));

CREATE TABLE statuses_tags (
  tag_id bigint NOT NULL REFERENCES tags (id) ON DELETE CASCADE,
  status_id bigint NOT NULL REFERENCES statuses (id) ON DELETE CASCADE,
  PRIMARY KEY (tag_id, status_id)
);
CREATE INDEX statuses_tags_status ON statuses_tags (status_id);

CREATE TABLE favourites (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  status_id bigint NOT NULL REFERENCES statuses (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, status_id)
);
CREATE INDEX favourites_status ON favourites (status_id, id);

-- Idempotency-Key: the same key from the same account within an hour gives back the first status.
CREATE TABLE idempotency_keys (
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  key text NOT NULL,
  status_id bigint NOT NULL REFERENCES statuses (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

CREATE TABLE markers (
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  timeline text NOT NULL CHECK (timeline IN ('home', 'notifications')),
  last_read_id bigint NOT NULL,
  version integer NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, timeline)
);

CREATE TABLE notifications (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  from_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  type text NOT NULL,
  status_id bigint REFERENCES statuses (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notifications_account ON notifications (account_id, id DESC);
-- One notification per event (a repeated favourite does not notify twice).
CREATE UNIQUE INDEX notifications_event ON notifications (account_id, from_account_id, type, coalesce(status_id, 0));

-- Work to queue after a commit: written in the same transaction, swept on start, so a crash loses none.
CREATE TABLE outbox (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  kind text NOT NULL,
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE outbox, notifications, markers, idempotency_keys, favourites, statuses_tags, tags, mentions, statuses;
