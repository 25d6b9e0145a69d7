-- Up Migration
-- Collections (Mastodon 4.6): an account's featured lists of accounts. Local only in this slice: `local` is always
-- true and `uri` null (as Mastodon stores its own collections); remote ones and feature requests come with federation.
CREATE TABLE collections (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  name text NOT NULL,
  description text,
  language text,
  sensitive boolean NOT NULL,
  discoverable boolean NOT NULL,
  tag_id bigint REFERENCES tags (id) ON DELETE SET NULL,
  local boolean NOT NULL DEFAULT true,
  uri text,
  item_count integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- An account's collections, newest first (GET /api/v1/accounts/:id/collections, the per-account limit).
CREATE INDEX collections_account ON collections (account_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX collections_uri ON collections (uri) WHERE uri IS NOT NULL;

-- The accounts in a collection, in the order they were added; `state` as Mastodon's (local accounts are accepted at once).
CREATE TABLE collection_items (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  collection_id bigint NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  position integer NOT NULL CHECK (position > 0),
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'accepted', 'rejected', 'revoked')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT collection_items_account UNIQUE (collection_id, account_id)
);
-- A collection's items by position.
CREATE INDEX collection_items_position ON collection_items (collection_id, position);
-- The collections an account is featured in (GET /api/v1/accounts/:id/in_collections), newest first.
CREATE INDEX collection_items_featured ON collection_items (account_id, collection_id DESC);

-- added_to_collection and collection_update name their collection; a collection's notifications go with it.
ALTER TABLE notifications ADD COLUMN collection_id bigint REFERENCES collections (id) ON DELETE CASCADE;
CREATE INDEX notifications_collection ON notifications (collection_id) WHERE collection_id IS NOT NULL;
DROP INDEX notifications_event;
CREATE UNIQUE INDEX notifications_event ON notifications (account_id, from_account_id, type, coalesce(status_id, 0), coalesce(report_id, 0), coalesce(collection_id, 0));

-- Down Migration
DROP INDEX notifications_event;
DELETE FROM notifications WHERE collection_id IS NOT NULL;
CREATE UNIQUE INDEX notifications_event ON notifications (account_id, from_account_id, type, coalesce(status_id, 0), coalesce(report_id, 0));
ALTER TABLE notifications DROP COLUMN collection_id;
DROP TABLE collection_items;
DROP TABLE collections;
