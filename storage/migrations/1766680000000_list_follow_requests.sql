-- Up Migration
-- A list may hold an account its owner has only asked to follow (Mastodon 4.x's ListAccount with a follow_request):
-- when a follower of a moved account is moved to a locked or remote one, their lists keep it while the request waits.
-- Such a member has no follow_id; list feeds and fan-out read only members with a follow (storage/lists.ts).
ALTER TABLE list_accounts
  ALTER COLUMN follow_id DROP NOT NULL,
  ADD COLUMN follow_request_id bigint REFERENCES follow_requests (id) ON DELETE SET NULL;
CREATE INDEX list_accounts_follow_request ON list_accounts (follow_request_id) WHERE follow_request_id IS NOT NULL;

-- A request ends by being accepted (its row deleted, then the follow inserted, in one transaction: storage/follows.ts)
-- or otherwise (rejected, withdrawn, unfollowed). At commit, the memberships it held go over to the follow if there
-- is one now, else they end, as a membership ends with its follow.
CREATE FUNCTION list_accounts_settle_request() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE list_accounts m SET follow_id = f.id
    FROM lists l, follows f
   WHERE m.account_id = OLD.target_account_id AND m.follow_id IS NULL AND m.follow_request_id IS NULL
     AND l.id = m.list_id AND l.account_id = OLD.account_id
     AND f.account_id = OLD.account_id AND f.target_account_id = OLD.target_account_id;
  DELETE FROM list_accounts m USING lists l
   WHERE m.account_id = OLD.target_account_id AND m.follow_id IS NULL AND m.follow_request_id IS NULL
     AND l.id = m.list_id AND l.account_id = OLD.account_id;
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER follow_requests_settle_lists AFTER DELETE ON follow_requests
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION list_accounts_settle_request();

-- Down Migration
DROP TRIGGER follow_requests_settle_lists ON follow_requests;
DROP FUNCTION list_accounts_settle_request();
DELETE FROM list_accounts WHERE follow_id IS NULL;
DROP INDEX list_accounts_follow_request;
ALTER TABLE list_accounts DROP COLUMN follow_request_id, ALTER COLUMN follow_id SET NOT NULL;
