-- Up Migration
-- Custom emoji (Mastodon's custom_emojis): this server's own (domain NULL), added by its operator from the command line,
-- and other servers' as their objects' Emoji tags name them, one row per shortcode and domain. A local emoji's image is
-- on our file host (`image_key`, with a PNG of its first frame under `static_key`); another server's is where that
-- server said (`image_remote_url`) until remote media are copied here. `updated_at` moves when the image changes.
CREATE TABLE custom_emojis (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  shortcode text NOT NULL,
  domain text,
  uri text,
  image_key text,
  image_content_type text,
  image_size integer,
  static_key text,
  image_remote_url text,
  category text,
  visible_in_picker boolean NOT NULL DEFAULT true,
  disabled boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT custom_emojis_shortcode CHECK (shortcode ~ '^[a-zA-Z0-9_]{2,}$' AND length(shortcode) <= 100),
  CONSTRAINT custom_emojis_local_image CHECK (domain IS NOT NULL OR (image_key IS NOT NULL AND static_key IS NOT NULL))
);
-- One emoji per shortcode and server; this server's (NULL domain) among them.
CREATE UNIQUE INDEX custom_emojis_shortcode_domain ON custom_emojis (shortcode, domain) NULLS NOT DISTINCT;
-- The picker's list: this server's emoji in shortcode order.
CREATE INDEX custom_emojis_local ON custom_emojis (shortcode) WHERE domain IS NULL;

-- Down Migration
DROP TABLE custom_emojis;
