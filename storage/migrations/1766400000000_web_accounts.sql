-- Up Migration
-- What a person needs to join and sign in from a browser: a confirmed e-mail address, password resets, two-factor
-- sign-in, and web sessions that can be listed and ended. Every token is stored only as its SHA-256.
ALTER TABLE users
  ADD COLUMN confirmed_at timestamptz,
  ADD COLUMN confirmation_token_hash text,
  ADD COLUMN confirmation_sent_at timestamptz,
  -- The address the confirmation link went to: it confirms that address and no other.
  ADD COLUMN confirmation_sent_to text,
  -- A new address waits here until it is confirmed; the old one stays in use meanwhile (Devise's reconfirmable).
  ADD COLUMN unconfirmed_email text,
  ADD COLUMN reset_password_token_hash text,
  ADD COLUMN reset_password_sent_at timestamptz,
  -- TOTP (RFC 6238): the shared secret (base32) once set up, the last time step used (a code works once), and ten
  -- single-use recovery codes, hashed.
  ADD COLUMN otp_secret text,
  ADD COLUMN otp_enabled_at timestamptz,
  ADD COLUMN otp_last_step bigint,
  ADD COLUMN otp_backup_code_hashes text[] NOT NULL DEFAULT '{}',
  ADD COLUMN last_sign_in_at timestamptz,
  ADD COLUMN last_sign_in_ip inet;
-- Alt text of the profile images (Mastodon 4.4's avatar_description and header_description).
-- And the person's wish that search engines leave their pages alone (Mastodon's noindex setting).
ALTER TABLE accounts ADD COLUMN avatar_description text NOT NULL DEFAULT '', ADD COLUMN header_description text NOT NULL DEFAULT '',
  ADD COLUMN noindex boolean NOT NULL DEFAULT false;
-- Everyone who exists already could sign in: they count as confirmed.
UPDATE users SET confirmed_at = created_at;
CREATE UNIQUE INDEX users_confirmation_token ON users (confirmation_token_hash) WHERE confirmation_token_hash IS NOT NULL;
CREATE UNIQUE INDEX users_reset_password_token ON users (reset_password_token_hash) WHERE reset_password_token_hash IS NOT NULL;

-- A browser's signed-in session: the cookie holds a random token, this table its hash.
CREATE TABLE web_sessions (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  token_hash text NOT NULL UNIQUE,
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  ip inet,
  user_agent text,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_active_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX web_sessions_user ON web_sessions (user_id, id);

-- Down Migration
DROP TABLE web_sessions;
ALTER TABLE accounts DROP COLUMN avatar_description, DROP COLUMN header_description, DROP COLUMN noindex;
DROP INDEX users_reset_password_token;
DROP INDEX users_confirmation_token;
ALTER TABLE users
  DROP COLUMN confirmed_at, DROP COLUMN confirmation_token_hash, DROP COLUMN confirmation_sent_at, DROP COLUMN confirmation_sent_to, DROP COLUMN unconfirmed_email,
  DROP COLUMN reset_password_token_hash, DROP COLUMN reset_password_sent_at, DROP COLUMN otp_secret, DROP COLUMN otp_enabled_at,
  DROP COLUMN otp_last_step, DROP COLUMN otp_backup_code_hashes, DROP COLUMN last_sign_in_at, DROP COLUMN last_sign_in_ip;
