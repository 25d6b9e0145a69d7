-- Up Migration
-- Applications a person made for themselves (Settings, Development, as Mastodon's /settings/applications): owned by
-- that user, listed and deleted by them; an app registered through POST /api/v1/apps has no owner.
ALTER TABLE oauth_applications ADD COLUMN owner_user_id bigint REFERENCES users (id) ON DELETE CASCADE;
CREATE INDEX oauth_applications_owner ON oauth_applications (owner_user_id) WHERE owner_user_id IS NOT NULL;

-- Down Migration
DROP INDEX oauth_applications_owner;
ALTER TABLE oauth_applications DROP COLUMN owner_user_id;
