-- Up Migration
-- Mastodon's "Disclose application used to send posts" (its user setting `show_application`, on by default): a
-- status shows the application it was posted from (statuses.application_id) to everyone while its author discloses
-- it, and to its author always. Kept on the account, whose cache version every profile change bumps, so that
-- renderings of the author's statuses made under the old choice are not reused.
ALTER TABLE accounts ADD COLUMN show_application boolean NOT NULL DEFAULT true;

-- Down Migration
ALTER TABLE accounts DROP COLUMN show_application;
