-- Up Migration
-- Which notifications a person is mailed about (kinds they changed from the defaults, services/notification-emails.ts),
-- the daily digest, and the throttle that keeps a flood of one kind from flooding their inbox.
ALTER TABLE users
  ADD COLUMN notification_emails jsonb NOT NULL DEFAULT '{}',
  ADD COLUMN notification_digest boolean NOT NULL DEFAULT false,
  ADD COLUMN last_digest_at timestamptz,
  -- The newest notification the last digest counted: the next one counts only newer ones.
  ADD COLUMN last_digest_notification_id bigint;

CREATE INDEX users_notification_digest ON users (id) WHERE notification_digest;

-- One row per person and kind: no other mail of that kind is queued before `quiet_until`.
CREATE TABLE notification_mail_throttle (
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  kind text NOT NULL,
  quiet_until timestamptz NOT NULL,
  PRIMARY KEY (user_id, kind)
);

-- Down Migration
DROP TABLE notification_mail_throttle;
DROP INDEX users_notification_digest;
ALTER TABLE users DROP COLUMN notification_emails, DROP COLUMN notification_digest, DROP COLUMN last_digest_at, DROP COLUMN last_digest_notification_id;
