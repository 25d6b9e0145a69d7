-- Up Migration
-- Account search by username prefix (text_pattern_ops serves LIKE 'abc%' whatever the collation).
CREATE INDEX accounts_username_prefix ON accounts (lower(username) text_pattern_ops);
CREATE INDEX tags_name_prefix ON tags (lower(name) text_pattern_ops);
-- Statuses found by their public page (a pasted link).
CREATE INDEX statuses_url ON statuses (url) WHERE url IS NOT NULL;

-- Down Migration
DROP INDEX statuses_url;
DROP INDEX tags_name_prefix;
DROP INDEX accounts_username_prefix;
