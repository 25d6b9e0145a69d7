-- Up Migration
-- Remote posts' quote rules (FEP-044f interactionPolicy.canQuote, Mastodon's quote_approval_policy of remote statuses)
-- live in the same column as local posts' policies, encoded by services/quotes.ts: local `public`, `followers`,
-- `nobody`; remote `<automatic keys>/<manual keys>` (keys: unsupported_policy, public, followers, following).
-- NOT VALID: only rows written from now on are checked (no scan of statuses); older rows hold `public` at most.
ALTER TABLE statuses ADD CONSTRAINT statuses_quote_approval_policy_format
  CHECK (quote_approval_policy ~ '^(public|followers|nobody|[a-z_,]*/[a-z_,]*)$') NOT VALID;
COMMENT ON COLUMN statuses.quote_approval_policy IS
  'who may quote: local public|followers|nobody; remote <automatic>/<manual> key lists (services/quotes.ts)';

-- Down Migration
COMMENT ON COLUMN statuses.quote_approval_policy IS NULL;
ALTER TABLE statuses DROP CONSTRAINT statuses_quote_approval_policy_format;
