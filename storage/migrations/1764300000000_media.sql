-- Up Migration
-- Uploaded (and, later, remote) media. An upload is staged on the file host, processed by a job, then attached.
CREATE TABLE media_attachments (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  status_id bigint REFERENCES statuses (id) ON DELETE SET NULL,
  position smallint NOT NULL DEFAULT 0,  -- place among its status's attachments, as the poster ordered them
  type text NOT NULL CHECK (type IN ('image', 'gifv', 'video', 'audio', 'unknown')),
  state text NOT NULL DEFAULT 'processing' CHECK (state IN ('processing', 'ready', 'failed')),
  staged_key text,                       -- the upload as received, until processed
  original_key text,
  original_type text,
  small_key text,
  small_type text,
  thumbnail_key text,                    -- a custom preview sent by the uploader (shown instead of small)
  remote_url text,
  meta jsonb NOT NULL DEFAULT '{}',
  blurhash text,
  description text NOT NULL DEFAULT '',
  focus_x real NOT NULL DEFAULT 0,
  focus_y real NOT NULL DEFAULT 0,
  failure text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX media_attachments_status ON media_attachments (status_id, id) WHERE status_id IS NOT NULL;
-- Unattached uploads, oldest first, for the clean-up of abandoned ones.
CREATE INDEX media_attachments_unattached ON media_attachments (created_at) WHERE status_id IS NULL;

-- Down Migration
DROP TABLE media_attachments;
