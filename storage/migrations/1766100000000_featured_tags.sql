-- Up Migration
-- Hashtags a person features on their profile (Mastodon's FeaturedTag), at most 10 each.
CREATE TABLE featured_tags (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  tag_id bigint NOT NULL REFERENCES tags (id) ON DELETE CASCADE,
  -- As the person wrote it (the tag row keeps the first spelling anyone used).
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, tag_id)
);
CREATE INDEX featured_tags_account ON featured_tags (account_id, id);

-- Down Migration
DROP TABLE featured_tags;
