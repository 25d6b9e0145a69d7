-- Up Migration
-- Removing a status (other servers' posts past the retention period, an account's deletion) cascades to every table
-- whose key names it; these four had no index on that column, so each removed status cost a scan of the whole table.
CREATE INDEX notifications_status ON notifications (status_id) WHERE status_id IS NOT NULL;
CREATE INDEX idempotency_keys_status ON idempotency_keys (status_id);
CREATE INDEX custom_filter_statuses_status ON custom_filter_statuses (status_id);
CREATE INDEX notification_requests_last_status ON notification_requests (last_status_id) WHERE last_status_id IS NOT NULL;
-- Whether a report names a status (a reported post is kept for the moderators when old remote posts are removed).
CREATE INDEX reports_status_ids ON reports USING gin (status_ids);

-- Down Migration
DROP INDEX reports_status_ids;
DROP INDEX notification_requests_last_status;
DROP INDEX custom_filter_statuses_status;
DROP INDEX idempotency_keys_status;
DROP INDEX notifications_status;
