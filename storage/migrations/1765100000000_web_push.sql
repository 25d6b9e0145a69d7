-- Up Migration
-- Web Push, as Mastodon has it: one VAPID key pair for the server (one row, made on first need by whichever
-- process gets there first), and at most one push subscription per access token.
CREATE TABLE vapid_keys (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  public_key text NOT NULL,   -- base64url of the uncompressed P-256 point (65 bytes): the `server_key` apps see
  private_key text NOT NULL,  -- base64url of the 32-byte private scalar
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE web_push_subscriptions (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  access_token_id bigint NOT NULL UNIQUE REFERENCES oauth_access_tokens (id) ON DELETE CASCADE,
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  -- The bearer token itself: Mastodon puts it in every push payload (`access_token`), where apps use it to tell
  -- which of their accounts a push is for. Only the subscribing app can read the payload; the row goes with the token.
  access_token text NOT NULL,
  endpoint text NOT NULL,
  key_p256dh text NOT NULL,   -- base64url, 65 bytes
  key_auth text NOT NULL,     -- base64url, 16 bytes
  standard boolean NOT NULL DEFAULT false, -- RFC 8291 aes128gcm and RFC 8292 VAPID; false: the legacy aesgcm drafts
  alerts text[] NOT NULL DEFAULT '{}',     -- the notification types pushed
  policy text NOT NULL DEFAULT 'all' CHECK (policy IN ('all', 'followed', 'follower', 'none')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX web_push_subscriptions_account ON web_push_subscriptions (account_id);

-- Tokens are revoked by setting revoked_at (every path: /oauth/revoke, password resets); their subscriptions go then.
CREATE FUNCTION web_push_subscriptions_token_revoked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM web_push_subscriptions WHERE access_token_id = NEW.id;
  RETURN NULL;
END
$$;
CREATE TRIGGER oauth_access_tokens_revoked_web_push
  AFTER UPDATE OF revoked_at ON oauth_access_tokens
  FOR EACH ROW WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL)
  EXECUTE FUNCTION web_push_subscriptions_token_revoked();

-- Down Migration
DROP TRIGGER oauth_access_tokens_revoked_web_push ON oauth_access_tokens;
DROP FUNCTION web_push_subscriptions_token_revoked();
DROP TABLE web_push_subscriptions;
DROP TABLE vapid_keys;
