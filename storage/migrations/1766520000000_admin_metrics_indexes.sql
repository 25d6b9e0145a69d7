-- Up Migration
-- The admin dashboard's measures (POST /api/v1/admin/measures) read sign-ins and resolved reports by a time range.
-- Everything else they read is ranged by id (ids are time-sortable) or by users.created_at, which are indexed already.
CREATE INDEX users_last_sign_in_at ON users (last_sign_in_at) WHERE last_sign_in_at IS NOT NULL;
CREATE INDEX reports_action_taken_at ON reports (action_taken_at) WHERE action_taken_at IS NOT NULL;

-- Down Migration
DROP INDEX reports_action_taken_at;
DROP INDEX users_last_sign_in_at;
