-- Up Migration
-- CSV imports from /settings/import (Mastodon's BulkImport): the import and its rows are written in one transaction
-- with the outbox row of its job; the job works through the rows in batches. A row applied is deleted; a row that
-- could not be resolved or applied stays with `failure` set, and is what the page lists at the end.
-- `state`: 'scheduled' (overwrite not done yet), 'in_progress', 'finished'.
CREATE TABLE imports (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  type text NOT NULL CHECK (type IN ('following', 'blocking', 'muting', 'domain_blocking', 'bookmarks', 'lists')),
  overwrite boolean NOT NULL DEFAULT false,
  state text NOT NULL DEFAULT 'scheduled' CHECK (state IN ('scheduled', 'in_progress', 'finished')),
  original_filename text NOT NULL DEFAULT '',
  total_items integer NOT NULL DEFAULT 0,
  processed_items integer NOT NULL DEFAULT 0,
  imported_items integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE INDEX imports_account ON imports (account_id, id);

CREATE TABLE import_rows (
  id bigserial PRIMARY KEY,
  import_id bigint NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
  -- What the row names, normalised (an address lowercased without a leading @ or our own domain, a domain, a post's
  -- URI, or a list title): what overwrite compares the account's present follows, blocks... with.
  target text NOT NULL,
  data jsonb NOT NULL,
  failure text
);
-- The job's next batch (rows not tried yet), and the failures shown on the page.
CREATE INDEX import_rows_pending ON import_rows (import_id, id) WHERE failure IS NULL;
CREATE INDEX import_rows_failed ON import_rows (import_id, id) WHERE failure IS NOT NULL;
CREATE INDEX import_rows_target ON import_rows (import_id, target);

-- Down Migration
DROP TABLE import_rows;
DROP TABLE imports;
