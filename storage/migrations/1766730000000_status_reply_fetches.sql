-- Up Migration
-- When a remote status's replies were last fetched (Mastodon's statuses.fetched_replies_at): opening its thread
-- fetches them again only after FETCH_REPLIES_COOLDOWN_MINUTES (services/thread-backfill.ts). A table of its own
-- rather than a column of statuses: it is written while the thread is read, and the status rows (and their caches)
-- stay as they are.
CREATE TABLE status_reply_fetches (
  status_id bigint PRIMARY KEY REFERENCES statuses (id) ON DELETE CASCADE,
  fetched_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE status_reply_fetches;
