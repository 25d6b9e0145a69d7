-- Up Migration
-- Instance-wide domain blocks and allows (Mastodon's DomainBlock and DomainAllow). A rule for `example.social` covers
-- its subdomains; the most specific rule for a domain is the one that holds. Domains are stored normalised: lower
-- case, IDNs in their ASCII (punycode) form, no trailing dot.
CREATE TABLE instance_domain_blocks (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  domain text NOT NULL UNIQUE,
  severity text NOT NULL DEFAULT 'silence' CHECK (severity IN ('silence', 'suspend', 'noop')),
  reject_media boolean NOT NULL DEFAULT false,
  reject_reports boolean NOT NULL DEFAULT false,
  private_comment text,
  public_comment text,
  obfuscate boolean NOT NULL DEFAULT false,
  -- Accounts suspended by this block carry this very timestamp in suspended_at (as in Mastodon), so lifting the block
  -- unsuspends those and no others. Whole milliseconds, as JavaScript's Date carries it back unchanged.
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- The public list (GET /api/v1/instance/domain_blocks) shows silences and suspensions, by severity then domain.
CREATE INDEX instance_domain_blocks_user_facing ON instance_domain_blocks (severity, domain) WHERE severity IN ('silence', 'suspend');

CREATE TABLE instance_domain_allows (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  domain text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- A domain and every domain above it: 'a.b.example' -> {a.b.example, b.example, example}; with a port, those with the
-- port first, then those without ('a.example:8443' -> {a.example:8443, example:8443, a.example, example}), so a block
-- of a host covers all its ports. The rules that can apply to an account are those whose domain is one of its
-- domain's variants (an indexed lookup on the unique domain). storage/instance-domain-blocks.ts computes the same.
CREATE FUNCTION domain_variants(d text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  WITH p AS (SELECT string_to_array(split_part(d, ':', 1), '.') AS parts, substring(d from ':[0-9]+$') AS port),
       v AS (SELECT array_to_string(p.parts[i:], '.') AS host, i FROM p, generate_subscripts(p.parts, 1) AS i)
  SELECT coalesce(array_agg(v.host || p.port ORDER BY v.i) FILTER (WHERE p.port IS NOT NULL), '{}')
         || coalesce(array_agg(v.host ORDER BY v.i), '{}')
    FROM v, p
$$;

-- The accounts of a domain and its subdomains (suspending and unsuspending them in batches).
CREATE INDEX accounts_domain_variants ON accounts USING gin (domain_variants(lower(domain))) WHERE domain IS NOT NULL;
-- Remote attachments still shown inline, by account (a domain's media rejected after the fact).
CREATE INDEX media_attachments_remote_inline ON media_attachments (account_id) WHERE remote_url IS NOT NULL AND type <> 'unknown';

-- Down Migration
DROP INDEX media_attachments_remote_inline;
DROP INDEX accounts_domain_variants;
DROP FUNCTION domain_variants(text);
DROP TABLE instance_domain_allows;
DROP TABLE instance_domain_blocks;
