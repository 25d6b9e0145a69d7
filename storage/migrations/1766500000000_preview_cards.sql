-- Up Migration
-- Link preview cards (Mastodon's PreviewCard): one per URL, made by the fetchLinkCard job (services/preview-cards.ts)
-- from the page's OpenGraph, Twitter and oEmbed data. `image_remote_url` is what the page named as its image (so that
-- a card stored without its image can get it later); `image_key` the resized copy on the file host.
CREATE TABLE preview_cards (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  url text NOT NULL,
  title text NOT NULL DEFAULT '',
  description text NOT NULL DEFAULT '',
  type text NOT NULL DEFAULT 'link',
  author_name text NOT NULL DEFAULT '',
  author_url text NOT NULL DEFAULT '',
  provider_name text NOT NULL DEFAULT '',
  provider_url text NOT NULL DEFAULT '',
  html text NOT NULL DEFAULT '',
  embed_url text NOT NULL DEFAULT '',
  width integer NOT NULL DEFAULT 0,
  height integer NOT NULL DEFAULT 0,
  image_remote_url text,
  image_key text,
  blurhash text,
  published_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX preview_cards_url ON preview_cards (url);

-- Which card a status shows (Mastodon's preview_cards_statuses: one card per status). `without_image`: the status
-- is from a server whose media we reject, so its card is shown without the image another post's card may have.
CREATE TABLE preview_cards_statuses (
  status_id bigint PRIMARY KEY REFERENCES statuses (id) ON DELETE CASCADE,
  preview_card_id bigint NOT NULL REFERENCES preview_cards (id) ON DELETE CASCADE,
  url text NOT NULL,
  without_image boolean NOT NULL DEFAULT false
);
-- The statuses showing a card (a card's timeline, trends, removing a card).
CREATE INDEX preview_cards_statuses_card ON preview_cards_statuses (preview_card_id, status_id);

-- Down Migration
DROP TABLE preview_cards_statuses;
DROP TABLE preview_cards;
