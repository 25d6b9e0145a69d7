-- Up Migration
-- What each remote server has lately done with us (federation/health.ts): one row per host (with its port), written
-- in batches every few seconds by every process, never per request. Counters only grow; times are the latest seen.
CREATE TABLE federation_servers (
  host text PRIMARY KEY,
  last_delivery_at timestamptz,
  last_fetch_at timestamptz,
  deliveries bigint NOT NULL DEFAULT 0,
  delivery_failures bigint NOT NULL DEFAULT 0,
  fetches bigint NOT NULL DEFAULT 0,
  fetch_failures bigint NOT NULL DEFAULT 0,
  dropped_inbound bigint NOT NULL DEFAULT 0,
  -- The latest failure: what failed (delivery, fetch, inbound), its HTTP status (null: no answer), a short excerpt
  -- of the answer or the error, and the URL involved.
  last_failure_at timestamptz,
  last_failure_kind text,
  last_failure_status integer,
  last_failure_detail text,
  last_failure_url text,
  -- The latest inbound activity dropped, and why.
  last_drop_at timestamptz,
  last_drop_reason text,
  -- The HTTP Signatures spec the server last took from us.
  signature_spec text,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX federation_servers_updated ON federation_servers (updated_at);

-- Down Migration
DROP TABLE federation_servers;
