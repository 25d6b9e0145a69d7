-- Up Migration
-- Security keys (WebAuthn) as a second factor, several per user with names (Mastodon's webauthn_credentials).
-- credential_id is the authenticator's id (base64url), public_key its COSE key; sign_count the last counter it reported.
CREATE TABLE webauthn_credentials (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  credential_id text NOT NULL UNIQUE,
  public_key bytea NOT NULL,
  sign_count bigint NOT NULL DEFAULT 0,
  transports text[] NOT NULL DEFAULT '{}',
  nickname text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  CONSTRAINT webauthn_credentials_user_nickname UNIQUE (user_id, nickname)
);
CREATE INDEX webauthn_credentials_user ON webauthn_credentials (user_id);

-- Down Migration
DROP TABLE webauthn_credentials;
