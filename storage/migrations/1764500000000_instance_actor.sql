-- Up Migration
-- The instance actor's keys (one row): it signs fetches no local user makes, as Mastodon's instance actor does.
CREATE TABLE instance_actor_keys (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  public_key_pem text NOT NULL,
  private_key_pem text NOT NULL,
  ed25519_public_jwk jsonb NOT NULL,
  ed25519_private_jwk jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE instance_actor_keys;
