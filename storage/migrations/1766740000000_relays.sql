-- Up Migration
-- Relays this server subscribes to (cli/relays.ts, federation/relays.ts). `url` is what the operator gave: a
-- Mastodon-style relay's inbox, or a LitePub relay's actor. `kind` and `inbox_url` are known once the worker has looked
-- at the URL (an actor document there makes it LitePub); until then kind is null. The Follow is sent from the instance
-- actor with `follow_uri` as its id, which the relay's Accept or Reject names.
CREATE TABLE relays (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  url text NOT NULL UNIQUE,
  kind text CHECK (kind IN ('mastodon', 'litepub')),
  actor_uri text,
  inbox_url text,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'accepted', 'rejected')),
  follow_uri text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE relays;
