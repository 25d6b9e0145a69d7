-- Up Migration
-- An Accept or Reject may name our Follow by its id alone: the request is found by that id.
CREATE INDEX follow_requests_uri ON follow_requests (uri) WHERE uri IS NOT NULL;

-- Down Migration
DROP INDEX follow_requests_uri;
