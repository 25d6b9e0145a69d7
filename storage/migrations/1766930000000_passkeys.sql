-- Up Migration
-- Passkeys: WebAuthn credentials kept on the authenticator (discoverable, with user verification) that sign in
-- alone, without a password or a second step. Security keys (the second factor) are the rows where it is false.
ALTER TABLE webauthn_credentials ADD COLUMN passkey boolean NOT NULL DEFAULT false;

-- Down Migration
ALTER TABLE webauthn_credentials DROP COLUMN passkey;
