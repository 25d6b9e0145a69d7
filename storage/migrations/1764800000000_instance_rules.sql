-- Up Migration

-- The server's rules, set by its operator (`npm run cli -- rules add …`), shown in the instance entity and at
-- /api/v1/instance/rules in priority order (then in the order they were added).
CREATE TABLE instance_rules (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  text text NOT NULL CHECK (length(text) BETWEEN 1 AND 300),
  hint text NOT NULL DEFAULT '' CHECK (length(hint) <= 1000),
  priority integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX instance_rules_order ON instance_rules (priority, id);

-- When a text setting (INSTANCE_EXTENDED_DESCRIPTION) last changed: the first process that starts with a new
-- value records the time, so every process reports the same `updated_at`.
CREATE TABLE instance_setting_versions (
  name text PRIMARY KEY,
  digest text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- GET /api/v1/instance/peers: distinct domains of remote accounts that are not suspended, read as a skip scan.
CREATE INDEX accounts_peer_domains ON accounts (lower(domain)) WHERE domain IS NOT NULL AND suspended_at IS NULL;
-- GET /api/v1/instance/activity: registrations and sign-ins (tokens given to users) per week.
CREATE INDEX users_created_at ON users (created_at);
CREATE INDEX oauth_access_tokens_user_created ON oauth_access_tokens (created_at) WHERE user_id IS NOT NULL;

-- Down Migration
DROP INDEX oauth_access_tokens_user_created;
DROP INDEX users_created_at;
DROP INDEX accounts_peer_domains;
DROP TABLE instance_setting_versions;
DROP TABLE instance_rules;
