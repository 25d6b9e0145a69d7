-- Up Migration

-- Scheduled posts (Mastodon's ScheduledStatus): what the author asked for, published by a delayed job at
-- scheduled_at (and by the sweeper if that job was lost). The row is the truth: publishing deletes it in the same
-- transaction that inserts the status, so a post is published once.
CREATE TABLE scheduled_statuses (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  scheduled_at timestamptz NOT NULL,
  params jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX scheduled_statuses_account ON scheduled_statuses (account_id, id);
-- The sweeper's work list (due ones) and the per-day limit.
CREATE INDEX scheduled_statuses_due ON scheduled_statuses (scheduled_at);

-- Media held by a scheduled post until it is published; released (and cleaned up later) when it is cancelled.
ALTER TABLE media_attachments ADD COLUMN scheduled_status_id bigint REFERENCES scheduled_statuses (id) ON DELETE SET NULL;
CREATE INDEX media_attachments_scheduled ON media_attachments (scheduled_status_id, id) WHERE scheduled_status_id IS NOT NULL;

-- Followed hashtags (Mastodon's TagFollow).
CREATE TABLE tag_follows (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  tag_id bigint NOT NULL REFERENCES tags (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, tag_id)
);
-- Fan-out finds a tag's followers in batches by id.
CREATE INDEX tag_follows_tag ON tag_follows (tag_id, id);
-- An account's followed tags, paged by id.
CREATE INDEX tag_follows_account ON tag_follows (account_id, id);

-- Direct conversations (Mastodon's AccountConversation): one row per local participant and set of other participants.
CREATE TABLE account_conversations (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  -- The other participants, sorted (empty for notes to oneself).
  participant_account_ids bigint[] NOT NULL,
  -- The direct statuses of the conversation, newest last (bounded: see storage/conversations.ts).
  status_ids bigint[] NOT NULL,
  last_status_id bigint NOT NULL,
  unread boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, participant_account_ids)
);
-- Listed newest activity first, paged by last_status_id, as Mastodon does.
CREATE INDEX account_conversations_account ON account_conversations (account_id, last_status_id DESC);

-- Down Migration
DROP TABLE account_conversations;
DROP TABLE tag_follows;
ALTER TABLE media_attachments DROP COLUMN scheduled_status_id;
DROP TABLE scheduled_statuses;
