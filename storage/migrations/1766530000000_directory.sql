-- Up Migration
-- The profile directory (GET /api/v1/directory): discoverable accounts that are not suspended, by latest post
-- ("active") or newest first ("new"), local ones alone or with remote ones; each order read from the top of its index.
CREATE INDEX accounts_directory_active ON accounts (last_status_at DESC NULLS LAST, id DESC)
  WHERE discoverable AND suspended_at IS NULL;
CREATE INDEX accounts_directory_new ON accounts (id DESC)
  WHERE discoverable AND suspended_at IS NULL;

-- Down Migration
DROP INDEX accounts_directory_new;
DROP INDEX accounts_directory_active;
