-- Up Migration
-- The ActivityPub type of a remote actor (Person, Group, Service, Application, Organization), as Mastodon keeps it:
-- a Group (a Lemmy community, a Friendica forum, a Mobilizon group) is shown with `group: true`, and its Announces
-- relay what its members post. Null for local accounts and for remote ones stored before this column.
ALTER TABLE accounts ADD COLUMN actor_type text;

-- Down Migration
ALTER TABLE accounts DROP COLUMN actor_type;
