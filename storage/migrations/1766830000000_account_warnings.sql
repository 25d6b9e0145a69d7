-- Up Migration
-- Strikes and their appeals (Mastodon's AccountWarning and Appeal). A strike is written with the moderation action it
-- records, in the same transaction; `status_ids` are the posts it concerns (a report's), kept as ids so that a post
-- deleted later leaves the strike readable. `overruled_at` is set when an appeal against it is approved.
CREATE TABLE account_warnings (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  target_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  action text NOT NULL CHECK (action IN ('none', 'disable', 'mark_statuses_as_sensitive', 'delete_statuses', 'sensitive', 'silence', 'suspend')),
  text text NOT NULL DEFAULT '' CHECK (length(text) <= 5000),
  status_ids bigint[] NOT NULL DEFAULT '{}',
  report_id bigint REFERENCES reports (id) ON DELETE SET NULL,
  overruled_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX account_warnings_target ON account_warnings (target_account_id, id DESC);
CREATE INDEX account_warnings_moderator ON account_warnings (account_id) WHERE account_id IS NOT NULL;
CREATE INDEX account_warnings_report ON account_warnings (report_id) WHERE report_id IS NOT NULL;

-- One appeal per strike, by the strike's target; approved or rejected once by an operator.
CREATE TABLE appeals (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  account_warning_id bigint NOT NULL UNIQUE REFERENCES account_warnings (id) ON DELETE CASCADE,
  text text NOT NULL CHECK (text <> '' AND length(text) <= 2000),
  approved_at timestamptz,
  approved_by_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  rejected_at timestamptz,
  rejected_by_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (approved_at IS NULL OR rejected_at IS NULL)
);
CREATE INDEX appeals_pending ON appeals (id) WHERE approved_at IS NULL AND rejected_at IS NULL;
CREATE INDEX appeals_account ON appeals (account_id);
CREATE INDEX appeals_approved_by ON appeals (approved_by_account_id) WHERE approved_by_account_id IS NOT NULL;
CREATE INDEX appeals_rejected_by ON appeals (rejected_by_account_id) WHERE rejected_by_account_id IS NOT NULL;

-- Down Migration
DROP TABLE appeals;
DROP TABLE account_warnings;
