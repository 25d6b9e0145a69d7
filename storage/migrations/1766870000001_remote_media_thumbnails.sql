-- Up Migration
-- The preview image another server gives for a video or audio attachment (PeerTube's thumbnail of a Video, as
-- Mastodon keeps thumbnail_remote_url): copied as the attachment's small image, shown as its preview.
ALTER TABLE media_attachments ADD COLUMN thumbnail_remote_url text;

-- Down Migration
ALTER TABLE media_attachments DROP COLUMN thumbnail_remote_url;
