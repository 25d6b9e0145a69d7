-- Up Migration
-- Remote accounts' images stay where their server keeps them (copying them here is separate work).
ALTER TABLE accounts ADD COLUMN avatar_remote_url text;
ALTER TABLE accounts ADD COLUMN header_remote_url text;
-- Local accounts' Ed25519 keys (for Object Integrity Proofs), made when first asked for; RSA keys are made at sign-up.
ALTER TABLE accounts ADD COLUMN ed25519_public_jwk jsonb;
ALTER TABLE accounts ADD COLUMN ed25519_private_jwk jsonb;
-- Remote follows are answered by the id of the Follow they accept or reject.
CREATE INDEX follows_uri ON follows (uri) WHERE uri IS NOT NULL;
-- Remote accounts of one server (delivery to shared inboxes, instance counts).
CREATE INDEX accounts_domain ON accounts (lower(domain)) WHERE domain IS NOT NULL;

-- Down Migration
DROP INDEX accounts_domain;
DROP INDEX follows_uri;
ALTER TABLE accounts DROP COLUMN ed25519_private_jwk;
ALTER TABLE accounts DROP COLUMN ed25519_public_jwk;
ALTER TABLE accounts DROP COLUMN header_remote_url;
ALTER TABLE accounts DROP COLUMN avatar_remote_url;
