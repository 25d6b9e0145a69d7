-- Up Migration
-- Files whose deletion waits for a backup to end (storage/file-deletions.ts): while `backup` runs, a file no row names
-- any more is not removed but listed here, so the files copied after the database dump still hold every file the
-- dump names; the list is worked through once no backup runs.
CREATE TABLE deferred_file_deletions (
  key text PRIMARY KEY,
  deferred_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE deferred_file_deletions;
