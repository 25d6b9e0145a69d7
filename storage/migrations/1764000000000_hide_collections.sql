-- Up Migration
ALTER TABLE accounts ADD COLUMN hide_collections boolean NOT NULL DEFAULT false;

-- Down Migration
ALTER TABLE accounts DROP COLUMN hide_collections;
