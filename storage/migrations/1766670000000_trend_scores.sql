-- Up Migration
-- Trend scores (Mastodon's preview_card_trends, status_trends and the tags' trend sets), written every five minutes
-- by the refreshTrends job (services/trends.ts) and read by the trends API in one bounded query. One row per link
-- (preview card), status or tag that trends, or that trended within the cooldown: `max_score` and `max_score_at` are
-- the peak its current score decays from (kept two days for links and tags, so that a smaller burst does not restart
-- it). `score` is 0 once it decayed below the threshold. `language` orders a viewer's languages first; `allowed`
-- is what the operators' reviews decided (services/trend-reviews.ts), kept in step when they review.
CREATE TABLE trend_scores (
  kind text NOT NULL CHECK (kind IN ('link', 'status', 'tag')),
  target_id bigint NOT NULL,
  score double precision NOT NULL DEFAULT 0,
  max_score double precision NOT NULL DEFAULT 0,
  max_score_at timestamptz,
  language text,
  allowed boolean NOT NULL DEFAULT false,
  refreshed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (kind, target_id)
);
-- The public lists (allowed only) and the operators' lists, each read from the top by score.
CREATE INDEX trend_scores_allowed ON trend_scores (kind, score DESC, target_id DESC) WHERE allowed AND score > 0;
CREATE INDEX trend_scores_trending ON trend_scores (kind, score DESC, target_id DESC) WHERE score > 0;
-- A refresh reads a kind's rows by peak.
CREATE INDEX trend_scores_peak ON trend_scores (kind, max_score DESC, target_id DESC);

-- Down Migration
DROP TABLE trend_scores;
