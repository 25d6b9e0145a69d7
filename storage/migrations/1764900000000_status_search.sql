-- Up Migration
-- Full-text search of statuses (GET /api/v2/search): one tsvector per status, kept current by triggers, on a GIN index.
-- The text is what Mastodon indexes: the content warning, the content with its HTML stripped, and the descriptions
-- of the media attachments. Words are stemmed in the status's language where PostgreSQL has a configuration for it,
-- and also kept as they are (`simple`), so a query matches either way (storage/search.ts builds queries to match).

-- The configuration for a language code (ISO 639-1, `pt-BR` counts as `pt`): only configurations this PostgreSQL
-- has are named (older versions lack some), anything else is `simple`.
-- IMMUTABLE and a bare CASE, so the planner inlines it and folds it with a constant argument.
DO $do$
DECLARE
  arms text := '';
  r record;
BEGIN
  FOR r IN
    SELECT v.code, v.cfg FROM (VALUES
      ('ar', 'arabic'), ('hy', 'armenian'), ('eu', 'basque'), ('ca', 'catalan'), ('da', 'danish'), ('nl', 'dutch'),
      ('en', 'english'), ('fi', 'finnish'), ('fr', 'french'), ('de', 'german'), ('el', 'greek'), ('hi', 'hindi'),
      ('hu', 'hungarian'), ('id', 'indonesian'), ('ga', 'irish'), ('it', 'italian'), ('lt', 'lithuanian'),
      ('ne', 'nepali'), ('no', 'norwegian'), ('nb', 'norwegian'), ('nn', 'norwegian'), ('pt', 'portuguese'),
      ('ro', 'romanian'), ('ru', 'russian'), ('sr', 'serbian'), ('es', 'spanish'), ('sv', 'swedish'), ('ta', 'tamil'),
      ('tr', 'turkish'), ('yi', 'yiddish')
    ) AS v (code, cfg)
    JOIN pg_ts_config c ON c.cfgname = v.cfg AND c.cfgnamespace = 'pg_catalog'::regnamespace
    ORDER BY v.code
  LOOP
    arms := arms || format(' WHEN %L THEN %L::regconfig', r.code, 'pg_catalog.' || r.cfg);
  END LOOP;
  EXECUTE format(
    $f$CREATE FUNCTION status_search_config(language text) RETURNS regconfig LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $body$
      SELECT CASE lower(split_part(replace(coalesce(language, ''), '_', '-'), '-', 1))%s ELSE 'pg_catalog.simple'::regconfig END
    $body$$f$,
    arms);
END
$do$;

-- A status's HTML as words: paragraphs and line breaks part words, other tags (links, Mastodon's invisible spans
-- inside long URLs) do not; the entities our sanitiser writes are decoded.
CREATE FUNCTION status_search_plain_text(html text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT replace(replace(replace(replace(replace(replace(
    regexp_replace(regexp_replace(html, '<(br|/?p)(\s[^>]*)?/?>', ' ', 'gi'), '<[^>]*>', '', 'g'),
    '&lt;', '<'), '&gt;', '>'), '&quot;', '"'), '&#39;', ''''), '&apos;', ''''), '&amp;', '&')
$$;

-- The searchable document of a status. Its language is the status's, else (local authors) the author's default
-- posting language or interface locale; words are stemmed in that language and also kept unstemmed (`simple`).
CREATE FUNCTION status_search_document(p_status_id bigint, p_account_id bigint, p_language text, p_content text, p_spoiler_text text)
RETURNS tsvector LANGUAGE sql STABLE AS $$
  SELECT to_tsvector(d.cfg, d.body)
         || CASE WHEN d.cfg = 'pg_catalog.simple'::regconfig THEN ''::tsvector ELSE to_tsvector('pg_catalog.simple'::regconfig, d.body) END
    FROM (SELECT concat_ws(' ', p_spoiler_text, status_search_plain_text(p_content),
                   (SELECT string_agg(m.description, ' ' ORDER BY m.position, m.id) FROM media_attachments m WHERE m.status_id = p_status_id)) AS body,
                 status_search_config(coalesce(p_language,
                   (SELECT coalesce(u.default_language, u.locale) FROM users u WHERE u.account_id = p_account_id))) AS cfg) d
$$;

ALTER TABLE statuses ADD COLUMN search_vector tsvector;

-- Without fastupdate: a new status goes straight into the index (measured no slower to insert, the tsvector is
-- the cost), rather than into a pending list of up to 4 MB that every search must read through and that makes the
-- planner shun the index until a vacuum empties it.
-- The index comes before the backfill: built after it, in the same transaction, it would meet the backfill's HOT
-- chains and be unusable (pg_index.indcheckxmin) until every transaction older than the migration had ended.
CREATE INDEX statuses_search ON statuses USING gin (search_vector) WITH (fastupdate = off) WHERE deleted_at IS NULL AND reblog_of_id IS NULL;

-- Existing statuses (reblogs are not searched: their text is the original's).
UPDATE statuses SET search_vector = status_search_document(id, account_id, language, content, spoiler_text) WHERE reblog_of_id IS NULL;

-- New and edited statuses. Counter updates do not touch these columns, so they neither recompute nor lose HOT updates.
CREATE FUNCTION statuses_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.reblog_of_id IS NULL THEN
    NEW.search_vector := status_search_document(NEW.id, NEW.account_id, NEW.language, NEW.content, NEW.spoiler_text);
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER statuses_search_vector BEFORE INSERT OR UPDATE OF content, spoiler_text, language ON statuses
  FOR EACH ROW EXECUTE FUNCTION statuses_search_vector();

-- Media attached, detached or described: the statuses concerned are indexed again.
CREATE FUNCTION media_attachments_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids bigint[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    ids := ARRAY[NEW.status_id];
  ELSIF TG_OP = 'DELETE' THEN
    ids := ARRAY[OLD.status_id];
  ELSE
    ids := ARRAY[OLD.status_id, NEW.status_id];
  END IF;
  UPDATE statuses s SET search_vector = status_search_document(s.id, s.account_id, s.language, s.content, s.spoiler_text)
   WHERE s.id = ANY (ids) AND s.reblog_of_id IS NULL;
  RETURN NULL;
END
$$;
CREATE TRIGGER media_attachments_search_vector_insert AFTER INSERT ON media_attachments
  FOR EACH ROW WHEN (NEW.status_id IS NOT NULL) EXECUTE FUNCTION media_attachments_search_vector();
CREATE TRIGGER media_attachments_search_vector_delete AFTER DELETE ON media_attachments
  FOR EACH ROW WHEN (OLD.status_id IS NOT NULL) EXECUTE FUNCTION media_attachments_search_vector();
CREATE TRIGGER media_attachments_search_vector_update AFTER UPDATE OF status_id, description ON media_attachments
  FOR EACH ROW WHEN (OLD.status_id IS DISTINCT FROM NEW.status_id OR (NEW.status_id IS NOT NULL AND OLD.description IS DISTINCT FROM NEW.description))
  EXECUTE FUNCTION media_attachments_search_vector();

-- Down Migration
DROP TRIGGER media_attachments_search_vector_update ON media_attachments;
DROP TRIGGER media_attachments_search_vector_delete ON media_attachments;
DROP TRIGGER media_attachments_search_vector_insert ON media_attachments;
DROP FUNCTION media_attachments_search_vector();
DROP TRIGGER statuses_search_vector ON statuses;
DROP FUNCTION statuses_search_vector();
DROP INDEX statuses_search;
ALTER TABLE statuses DROP COLUMN search_vector;
DROP FUNCTION status_search_document(bigint, bigint, text, text, text);
DROP FUNCTION status_search_plain_text(text);
DROP FUNCTION status_search_config(text);
