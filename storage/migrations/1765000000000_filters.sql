-- Up Migration
-- Filters (Mastodon's v2 CustomFilter): words, phrases and single statuses a person does not want to see, in the
-- contexts they choose. The v1 API reads and writes the same rows (one v1 filter is one keyword).
CREATE TABLE custom_filters (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  title text NOT NULL,
  context text[] NOT NULL,
  action text NOT NULL DEFAULT 'warn' CHECK (action IN ('warn', 'hide', 'blur')),
  expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX custom_filters_account ON custom_filters (account_id, id);

CREATE TABLE custom_filter_keywords (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  custom_filter_id bigint NOT NULL REFERENCES custom_filters (id) ON DELETE CASCADE,
  keyword text NOT NULL,
  whole_word boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX custom_filter_keywords_filter ON custom_filter_keywords (custom_filter_id, id);

CREATE TABLE custom_filter_statuses (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  custom_filter_id bigint NOT NULL REFERENCES custom_filters (id) ON DELETE CASCADE,
  status_id bigint NOT NULL REFERENCES statuses (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (custom_filter_id, status_id)
);

-- Down Migration
DROP TABLE custom_filter_statuses;
DROP TABLE custom_filter_keywords;
DROP TABLE custom_filters;
