-- Up Migration
-- Operators' notifications (Mastodon's admin.sign_up and admin.report): an admin.report names its report, and each
-- report notifies on its own (one reporter's second report is a new notification), so the report is part of what
-- makes a notification one event.
ALTER TABLE notifications ADD COLUMN report_id bigint REFERENCES reports (id) ON DELETE CASCADE;
DROP INDEX notifications_event;
CREATE UNIQUE INDEX notifications_event ON notifications (account_id, from_account_id, type, coalesce(status_id, 0), coalesce(report_id, 0));

-- Down Migration
DELETE FROM notifications WHERE report_id IS NOT NULL;
DROP INDEX notifications_event;
CREATE UNIQUE INDEX notifications_event ON notifications (account_id, from_account_id, type, coalesce(status_id, 0));
ALTER TABLE notifications DROP COLUMN report_id;
