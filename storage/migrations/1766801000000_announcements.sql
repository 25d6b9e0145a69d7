-- Up Migration
-- Operators' announcements to everyone signed in (Mastodon's Announcement, AnnouncementMute, AnnouncementReaction).
-- `text` is what the operator wrote; it is rendered as HTML when shown. A scheduled one is published by a delayed
-- job (the outbox's `runAt`) at `scheduled_at`.
CREATE TABLE announcements (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  text text NOT NULL CHECK (text <> '' AND length(text) <= 5000),
  published boolean NOT NULL DEFAULT false,
  all_day boolean NOT NULL DEFAULT false,
  scheduled_at timestamptz,
  starts_at timestamptz,
  ends_at timestamptz CHECK (ends_at IS NULL OR starts_at IS NULL OR ends_at > starts_at),
  published_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX announcements_published ON announcements (id) WHERE published;

-- Who dismissed (read) which announcement.
CREATE TABLE announcement_mutes (
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  announcement_id bigint NOT NULL REFERENCES announcements (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (announcement_id, account_id)
);
CREATE INDEX announcement_mutes_account ON announcement_mutes (account_id);

-- Reactions: a unicode emoji, or a custom emoji of this server by its shortcode (custom_emoji_id set).
CREATE TABLE announcement_reactions (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  announcement_id bigint NOT NULL REFERENCES announcements (id) ON DELETE CASCADE,
  name text NOT NULL CHECK (name <> '' AND length(name) <= 200),
  custom_emoji_id bigint REFERENCES custom_emojis (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (announcement_id, account_id, name)
);
CREATE INDEX announcement_reactions_account ON announcement_reactions (account_id);

-- Down Migration
DROP TABLE announcement_reactions;
DROP TABLE announcement_mutes;
DROP TABLE announcements;
