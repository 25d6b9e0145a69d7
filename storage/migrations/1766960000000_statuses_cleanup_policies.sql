-- Up Migration
-- Automated deletion of a person's old posts (Mastodon's account_statuses_cleanup_policies): one row per account that
-- has opened the settings page, with Mastodon's defaults. The repeating job (services/statuses-cleanup.ts) visits
-- enabled policies by last_run_at, oldest first, and deletes a bounded batch of each account's matching posts.
CREATE TABLE account_statuses_cleanup_policies (
  account_id bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
  enabled boolean NOT NULL DEFAULT false,
  min_status_age integer NOT NULL DEFAULT 1209600 CHECK (min_status_age > 0),
  keep_direct boolean NOT NULL DEFAULT true,
  keep_pinned boolean NOT NULL DEFAULT true,
  keep_polls boolean NOT NULL DEFAULT false,
  keep_media boolean NOT NULL DEFAULT false,
  keep_self_fav boolean NOT NULL DEFAULT true,
  keep_self_bookmark boolean NOT NULL DEFAULT true,
  min_favs integer CHECK (min_favs IS NULL OR min_favs > 0),
  min_reblogs integer CHECK (min_reblogs IS NULL OR min_reblogs > 0),
  last_run_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX account_statuses_cleanup_due ON account_statuses_cleanup_policies (last_run_at NULLS FIRST) WHERE enabled;

-- Down Migration
DROP TABLE account_statuses_cleanup_policies;
