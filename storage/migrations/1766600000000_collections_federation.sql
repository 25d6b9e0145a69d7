-- Up Migration
-- Collections across servers (Mastodon 4.6): remote collections are stored under their uri (collections.uri, unique
-- already) with `local` false; an item has the uri its collection's server gave it, and, for an account of another
-- server, the FeatureRequest that asked it (activity_uri) and the FeatureAuthorization that approved it (approval_uri).
ALTER TABLE collection_items ADD COLUMN uri text;
ALTER TABLE collection_items ADD COLUMN activity_uri text;
ALTER TABLE collection_items ADD COLUMN approval_uri text;
CREATE UNIQUE INDEX collection_items_uri ON collection_items (uri) WHERE uri IS NOT NULL;
CREATE UNIQUE INDEX collection_items_activity_uri ON collection_items (activity_uri) WHERE activity_uri IS NOT NULL;
-- A featured account's server withdraws its approval by deleting it: the item it approved is found by it.
CREATE INDEX collection_items_approval_uri ON collection_items (approval_uri) WHERE approval_uri IS NOT NULL;

-- Down Migration
DROP INDEX collection_items_approval_uri;
DROP INDEX collection_items_activity_uri;
DROP INDEX collection_items_uri;
ALTER TABLE collection_items DROP COLUMN approval_uri;
ALTER TABLE collection_items DROP COLUMN activity_uri;
ALTER TABLE collection_items DROP COLUMN uri;
