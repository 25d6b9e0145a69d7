-- Up Migration
-- What operators decided about trends (Mastodon's `trendable` and `reviewed_at` on preview cards, statuses and tags):
-- one row per reviewed link (a preview card), status or tag. `trendable` false is a rejection. Links trend only once
-- approved (here, or through their publisher); tags and statuses trend unless rejected (services/trend-reviews.ts).
CREATE TABLE trend_reviews (
  kind text NOT NULL CHECK (kind IN ('link', 'status', 'tag')),
  target_id bigint NOT NULL,
  trendable boolean NOT NULL,
  reviewed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (kind, target_id)
);

-- Publishers of trending links (Mastodon's PreviewCardProvider): one per host, made when a link of that host first
-- becomes a trend candidate. An approved publisher's links trend without a review of their own.
CREATE TABLE trend_publishers (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  domain text NOT NULL,
  trendable boolean NOT NULL DEFAULT false,
  reviewed_at timestamptz,
  requested_review_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX trend_publishers_domain ON trend_publishers (domain);

-- Down Migration
DROP TABLE trend_publishers;
DROP TABLE trend_reviews;
