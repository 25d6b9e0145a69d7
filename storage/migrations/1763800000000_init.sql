-- Up Migration

-- Time-sortable 64-bit ids: milliseconds since the epoch shifted left 16 bits,
-- plus the low 16 bits of a shared sequence (DESIGN.md, "Rules the parts share").
CREATE SEQUENCE timestamp_id_seq CYCLE;
CREATE FUNCTION timestamp_id() RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT ((floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) << 16)
         | (nextval('timestamp_id_seq') & 65535)
$$;

CREATE TABLE accounts (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  username text NOT NULL,
  domain text,                          -- NULL for local accounts
  display_name text NOT NULL DEFAULT '',
  note_source text NOT NULL DEFAULT '', -- what a local user typed
  note_html text NOT NULL DEFAULT '',   -- rendered, sanitised HTML
  fields jsonb NOT NULL DEFAULT '[]',   -- [{name, value, value_html, verified_at}]
  locked boolean NOT NULL DEFAULT false,
  bot boolean NOT NULL DEFAULT false,
  discoverable boolean,
  indexable boolean NOT NULL DEFAULT false,
  avatar_file text,                     -- file-host key
  avatar_content_type text,
  header_file text,
  header_content_type text,
  uri text,                             -- ActivityPub id (remote), NULL for local (derived)
  url text,
  inbox_url text,
  shared_inbox_url text,
  outbox_url text,
  followers_url text,
  public_key_pem text,
  private_key_pem text,                 -- only for local accounts
  followers_count integer NOT NULL DEFAULT 0,
  following_count integer NOT NULL DEFAULT 0,
  statuses_count integer NOT NULL DEFAULT 0,
  last_status_at timestamptz,
  suspended_at timestamptz,
  fetched_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX accounts_username_domain ON accounts (lower(username), coalesce(lower(domain), ''));
CREATE UNIQUE INDEX accounts_uri ON accounts (uri) WHERE uri IS NOT NULL;

CREATE TABLE users (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL UNIQUE REFERENCES accounts (id) ON DELETE CASCADE,
  email text NOT NULL,
  password_hash text NOT NULL,
  admin boolean NOT NULL DEFAULT false,
  approved boolean NOT NULL DEFAULT true,
  locale text,
  reason text,
  agreement_at timestamptz,
  default_privacy text NOT NULL DEFAULT 'public',
  default_sensitive boolean NOT NULL DEFAULT false,
  default_language text,
  created_by_application_id bigint,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email ON users (lower(email));

CREATE TABLE oauth_applications (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  name text NOT NULL,
  website text,
  redirect_uris text[] NOT NULL,
  scopes text NOT NULL,
  client_id text NOT NULL UNIQUE,
  client_secret_hash text NOT NULL,     -- sha256 of the secret: it is shown once, at creation
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE oauth_access_grants (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  code_hash text NOT NULL UNIQUE,
  application_id bigint NOT NULL REFERENCES oauth_applications (id) ON DELETE CASCADE,
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  redirect_uri text NOT NULL,
  scopes text NOT NULL,
  code_challenge text,
  code_challenge_method text,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_access_grants_expires ON oauth_access_grants (expires_at);

CREATE TABLE oauth_access_tokens (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  token_hash text NOT NULL UNIQUE,      -- sha256 of the bearer token
  application_id bigint NOT NULL REFERENCES oauth_applications (id) ON DELETE CASCADE,
  user_id bigint REFERENCES users (id) ON DELETE CASCADE, -- NULL for client_credentials
  scopes text NOT NULL,
  revoked_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_access_tokens_user ON oauth_access_tokens (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX oauth_access_tokens_application ON oauth_access_tokens (application_id);

CREATE TABLE follows (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  target_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  show_reblogs boolean NOT NULL DEFAULT true,
  notify boolean NOT NULL DEFAULT false,
  languages text[],
  uri text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, target_account_id),
  CHECK (account_id <> target_account_id)
);
-- Followers of an account, newest first, and following lists: both page by follows.id.
CREATE INDEX follows_target ON follows (target_account_id, id);
CREATE INDEX follows_account ON follows (account_id, id);

CREATE TABLE follow_requests (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  target_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  show_reblogs boolean NOT NULL DEFAULT true,
  notify boolean NOT NULL DEFAULT false,
  languages text[],
  uri text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, target_account_id),
  CHECK (account_id <> target_account_id)
);
CREATE INDEX follow_requests_target ON follow_requests (target_account_id, id);

-- Down Migration
DROP TABLE follow_requests, follows, oauth_access_tokens, oauth_access_grants, oauth_applications, users, accounts;
DROP FUNCTION timestamp_id();
DROP SEQUENCE timestamp_id_seq;
