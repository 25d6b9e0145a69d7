-- Up Migration
-- Annual reports ("Wrapstodon", Mastodon 4.3+): one row per account and year. The row is written when the report is
-- asked for (POST /api/v1/annual_reports/:year/generate, with the outbox row of its job in the same transaction);
-- `data` is NULL while the job computes it ("generating") and the report's JSON once it has ("available").
-- `viewed_at` is set by POST .../read; GET /api/v1/annual_reports lists the reports not viewed yet.
CREATE TABLE annual_reports (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  year integer NOT NULL CHECK (year BETWEEN 1970 AND 9999),
  schema_version integer NOT NULL DEFAULT 1,
  data jsonb,
  requested_at timestamptz NOT NULL DEFAULT now(),
  generated_at timestamptz,
  viewed_at timestamptz,
  UNIQUE (account_id, year)
);

-- Down Migration
DROP TABLE annual_reports;
