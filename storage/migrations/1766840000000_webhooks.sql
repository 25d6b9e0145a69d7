-- Up Migration
-- Operators' webhooks (Mastodon's admin webhooks): a URL that is POSTed a signed JSON event for each of `events`
-- while `enabled`. The secret signs each body (X-Hub-Signature); `webhook_deliveries` keeps each webhook's last
-- attempts for the operators' page (services/webhooks.ts trims it).
CREATE TABLE webhooks (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  url text NOT NULL,
  events text[] NOT NULL,
  secret text NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE webhook_deliveries (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  webhook_id bigint NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event text NOT NULL,
  attempt integer NOT NULL,
  status_code integer,
  error text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id DESC);

-- Down Migration
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
