-- Up Migration
-- Who a user is at a single sign-on provider (Mastodon's identities): the provider's name and the user's id there
-- (the claim OIDC_UID_FIELD names). One id at a provider is one user here, and a user has at most one id per provider.
CREATE TABLE user_identities (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  provider text NOT NULL,
  uid text NOT NULL,
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT user_identities_provider_uid UNIQUE (provider, uid),
  CONSTRAINT user_identities_user_provider UNIQUE (user_id, provider)
);

-- Down Migration
DROP TABLE user_identities;
