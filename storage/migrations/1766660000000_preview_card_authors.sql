-- Up Migration
-- What Mastodon 4.3 added to link preview cards: the page's language, its image's alt text, and the fediverse account
-- of its author (`<meta name="fediverse:creator">`), set only when the account may be credited for the page's site
-- (jobs/link-cards.ts). An account that goes leaves the card without it.
ALTER TABLE preview_cards
  ADD COLUMN language text,
  ADD COLUMN image_description text NOT NULL DEFAULT '',
  ADD COLUMN author_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL;
-- For the foreign key's SET NULL when an account row is deleted.
CREATE INDEX preview_cards_author_account ON preview_cards (author_account_id) WHERE author_account_id IS NOT NULL;

-- Down Migration
DROP INDEX preview_cards_author_account;
ALTER TABLE preview_cards DROP COLUMN author_account_id, DROP COLUMN image_description, DROP COLUMN language;
