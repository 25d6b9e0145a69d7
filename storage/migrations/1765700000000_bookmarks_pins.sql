-- Up Migration
-- Bookmarks (Mastodon's Bookmark): a person's private list of statuses, paged by the bookmark's id.
CREATE TABLE bookmarks (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  status_id bigint NOT NULL REFERENCES statuses (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, status_id)
);
CREATE INDEX bookmarks_account ON bookmarks (account_id, id);
CREATE INDEX bookmarks_status ON bookmarks (status_id);

-- GET /api/v1/favourites pages a person's favourites by the favourite's id.
CREATE INDEX favourites_account ON favourites (account_id, id);

-- Pins (Mastodon's StatusPin): a local account's own public or unlisted statuses (at most 5, checked when pinning),
-- and a remote account's as its featured collection says. Newest pin first.
CREATE TABLE status_pins (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  status_id bigint NOT NULL REFERENCES statuses (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, status_id)
);
CREATE INDEX status_pins_account ON status_pins (account_id, id);
CREATE INDEX status_pins_status ON status_pins (status_id);
-- A remote account's featured collection (its actor's `featured`), which its Add and Remove activities must name.
ALTER TABLE accounts ADD COLUMN featured_collection_url text;

-- Muted conversations (Mastodon's ConversationMute): keyed by the thread's root status as it was known when muted;
-- a status is in a muted conversation when that root is among its ancestors (or is itself).
CREATE TABLE conversation_mutes (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  root_status_id bigint NOT NULL REFERENCES statuses (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, root_status_id)
);
CREATE INDEX conversation_mutes_root ON conversation_mutes (root_status_id);

-- Down Migration
DROP TABLE conversation_mutes;
DROP TABLE status_pins;
ALTER TABLE accounts DROP COLUMN featured_collection_url;
DROP INDEX favourites_account;
DROP TABLE bookmarks;
