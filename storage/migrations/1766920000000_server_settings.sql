-- Up Migration
-- The server's settings that an operator changes while it runs (services/server-settings.ts: title, descriptions,
-- contact, sign-ups, languages, terms, privacy policy, posting and media limits), one row per setting by Mastodon's
-- name for it. Each missing row is written from the environment's value when a process starts, so the environment
-- gives only the first value; after that the operators' settings page (or the CLI) changes it.
CREATE TABLE server_settings (
  name text PRIMARY KEY CHECK (name ~ '^[a-z_]{1,64}$'),
  value jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE server_settings;
