-- Up Migration
-- Deleting an account. `deleted_at` marks an account whose data is removed (or being removed) for good:
-- a local one kept only as a suspended shell so that its username is never registered again (Mastodon keeps the
-- same), a remote one kept as a tombstone so that stale deliveries and later fetches do not bring it back. The
-- actor of a deleted local account answers 410 Gone.
ALTER TABLE accounts ADD COLUMN deleted_at timestamptz;

-- The deletion job removes an account's rows in bounded batches by each column that names it; these columns had no
-- index leading with them (a batch would otherwise scan the whole table).
CREATE INDEX IF NOT EXISTS notifications_from_account ON notifications (from_account_id);
CREATE INDEX IF NOT EXISTS notification_requests_from_account ON notification_requests (from_account_id);
CREATE INDEX IF NOT EXISTS notification_permissions_from_account ON notification_permissions (from_account_id);
CREATE INDEX IF NOT EXISTS mutes_target_account ON mutes (target_account_id);
CREATE INDEX IF NOT EXISTS account_notes_target_account ON account_notes (target_account_id);
CREATE INDEX IF NOT EXISTS account_endorsements_target_account ON account_endorsements (target_account_id);
CREATE INDEX IF NOT EXISTS quotes_account ON quotes (account_id);
CREATE INDEX IF NOT EXISTS quotes_quoted_account ON quotes (quoted_account_id) WHERE quoted_account_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS status_edits_account ON status_edits (account_id);
CREATE INDEX IF NOT EXISTS statuses_in_reply_to_account ON statuses (in_reply_to_account_id) WHERE in_reply_to_account_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS reports_assigned_account ON reports (assigned_account_id) WHERE assigned_account_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS reports_action_taken_by_account ON reports (action_taken_by_account_id) WHERE action_taken_by_account_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS canonical_email_blocks_reference_account ON canonical_email_blocks (reference_account_id) WHERE reference_account_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS oauth_access_grants_user ON oauth_access_grants (user_id);
-- An account's statuses already flagged deleted (statuses_account covers only the others).
CREATE INDEX IF NOT EXISTS statuses_account_deleted ON statuses (account_id, id) WHERE deleted_at IS NOT NULL;

-- Down Migration
DROP INDEX IF EXISTS statuses_account_deleted;
DROP INDEX IF EXISTS oauth_access_grants_user;
DROP INDEX IF EXISTS canonical_email_blocks_reference_account;
DROP INDEX IF EXISTS reports_action_taken_by_account;
DROP INDEX IF EXISTS reports_assigned_account;
DROP INDEX IF EXISTS statuses_in_reply_to_account;
DROP INDEX IF EXISTS status_edits_account;
DROP INDEX IF EXISTS quotes_quoted_account;
DROP INDEX IF EXISTS quotes_account;
DROP INDEX IF EXISTS account_endorsements_target_account;
DROP INDEX IF EXISTS account_notes_target_account;
DROP INDEX IF EXISTS mutes_target_account;
DROP INDEX IF EXISTS notification_permissions_from_account;
DROP INDEX IF EXISTS notification_requests_from_account;
DROP INDEX IF EXISTS notifications_from_account;
ALTER TABLE accounts DROP COLUMN deleted_at;
