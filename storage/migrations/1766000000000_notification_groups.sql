-- Up Migration

-- Grouped notifications (Mastodon 4.3): favourites of one status, reblogs of one status, and follows share a group
-- key while they arrive within a span of 12 hours ("<type>[-<status id>]-<hour since the epoch the group began>").
-- A notification the recipient's policy filters is kept aside (`filtered`, no group key) and shown through a
-- notification request per sending account instead of in the list.
ALTER TABLE notifications ADD COLUMN group_key text, ADD COLUMN filtered boolean NOT NULL DEFAULT false;
CREATE INDEX notifications_group ON notifications (account_id, group_key, id DESC) WHERE group_key IS NOT NULL;
-- The list without what is filtered, and an account's filtered notifications by sender (requests).
CREATE INDEX notifications_unfiltered ON notifications (account_id, id DESC) WHERE NOT filtered;
CREATE INDEX notifications_filtered ON notifications (account_id, from_account_id, id) WHERE filtered;

-- The group key a new notification takes: the group of the same type (and status) begun in the last 12 hours if
-- there is one, else one that begins in the current hour; NULL for types that are not grouped. At most 12 index
-- probes (one per candidate hour).
CREATE FUNCTION notification_group_key(recipient bigint, kind text, status bigint) RETURNS text
LANGUAGE sql STABLE AS $$
  WITH k AS (
    SELECT CASE kind WHEN 'follow' THEN 'follow' ELSE kind || '-' || status END AS prefix,
           floor(extract(epoch FROM now()) / 3600)::bigint AS hour
  )
  SELECT k.prefix || '-' || coalesce(
    (SELECT max(substring(n.group_key FROM '[0-9]+$')::bigint) FROM notifications n
      WHERE n.account_id = recipient
        AND n.group_key = ANY (ARRAY(SELECT k.prefix || '-' || h FROM generate_series(k.hour - 11, k.hour) h))),
    k.hour)
  FROM k
  WHERE kind IN ('favourite', 'reblog', 'follow') AND (kind = 'follow' OR status IS NOT NULL)
$$;

-- Mastodon's NotificationPolicy: what to do with notifications from each kind of stranger. No row: the defaults.
CREATE TABLE notification_policies (
  account_id bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
  for_not_following text NOT NULL DEFAULT 'accept' CHECK (for_not_following IN ('accept', 'filter', 'drop')),
  for_not_followers text NOT NULL DEFAULT 'accept' CHECK (for_not_followers IN ('accept', 'filter', 'drop')),
  for_new_accounts text NOT NULL DEFAULT 'accept' CHECK (for_new_accounts IN ('accept', 'filter', 'drop')),
  for_private_mentions text NOT NULL DEFAULT 'filter' CHECK (for_private_mentions IN ('accept', 'filter', 'drop')),
  for_limited_accounts text NOT NULL DEFAULT 'filter' CHECK (for_limited_accounts IN ('accept', 'filter', 'drop')),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- One request per sender with filtered notifications; its count is read from the filtered notifications.
CREATE TABLE notification_requests (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  from_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  last_status_id bigint REFERENCES statuses (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, from_account_id)
);
CREATE INDEX notification_requests_account ON notification_requests (account_id, id DESC);

-- Senders whose request was accepted: their notifications are never filtered again (Mastodon's NotificationPermission).
CREATE TABLE notification_permissions (
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  from_account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, from_account_id)
);

-- Down Migration
DROP TABLE notification_permissions;
DROP TABLE notification_requests;
DROP TABLE notification_policies;
DROP FUNCTION notification_group_key(bigint, text, bigint);
DROP INDEX notifications_filtered;
DROP INDEX notifications_unfiltered;
DROP INDEX notifications_group;
ALTER TABLE notifications DROP COLUMN filtered, DROP COLUMN group_key;
