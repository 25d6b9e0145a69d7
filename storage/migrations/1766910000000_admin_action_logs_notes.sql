-- Up Migration
-- What operators did (Mastodon's admin_action_logs): who (`account_id`, kept as null once their account is gone),
-- which action (`create`, `suspend`, `resolve`, ...) on which kind of thing (`target_type`: Account, Report,
-- DomainBlock, ...) and which one (`target_id`), and a name for it that outlives it (`human_identifier`: an acct, a
-- domain, an address range). Written by the service that acts, in the same transaction as the action.
CREATE TABLE admin_action_logs (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  action text NOT NULL CHECK (action ~ '^[a-z_]{1,40}$'),
  target_type text NOT NULL CHECK (target_type ~ '^[A-Za-z]{1,40}$'),
  target_id bigint,
  human_identifier text NOT NULL DEFAULT '' CHECK (length(human_identifier) <= 500),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX admin_action_logs_account ON admin_action_logs (account_id, id DESC) WHERE account_id IS NOT NULL;
CREATE INDEX admin_action_logs_action ON admin_action_logs (action, id DESC);
CREATE INDEX admin_action_logs_target ON admin_action_logs (target_type, target_id);

-- Operators' notes about an account (Mastodon's account_moderation_notes) and about a report (report_notes).
CREATE TABLE account_moderation_notes (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  target_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  content text NOT NULL CHECK (content <> '' AND length(content) <= 2000),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX account_moderation_notes_target ON account_moderation_notes (target_account_id, id);
CREATE INDEX account_moderation_notes_author ON account_moderation_notes (account_id) WHERE account_id IS NOT NULL;

CREATE TABLE report_notes (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  report_id bigint NOT NULL REFERENCES reports (id) ON DELETE CASCADE,
  content text NOT NULL CHECK (content <> '' AND length(content) <= 2000),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX report_notes_report ON report_notes (report_id, id);
CREATE INDEX report_notes_author ON report_notes (account_id) WHERE account_id IS NOT NULL;

-- Down Migration
DROP TABLE report_notes;
DROP TABLE account_moderation_notes;
DROP TABLE admin_action_logs;
