-- Up Migration
-- The id of the Like or EmojiReact another server sent for a favourite, so that an Undo naming it by id alone
-- (Pleroma, Akkoma) finds the favourite it undoes. Local favourites have none (their Like's id is made from the row).
ALTER TABLE favourites ADD COLUMN uri text;
CREATE INDEX favourites_uri ON favourites (uri) WHERE uri IS NOT NULL;

-- Down Migration
DROP INDEX favourites_uri;
ALTER TABLE favourites DROP COLUMN uri;
