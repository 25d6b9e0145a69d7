-- Up Migration
-- The operator's sign-up and access blocks (Mastodon's IpBlock, EmailDomainBlock and CanonicalEmailBlock).

-- A range of addresses (a bare address is stored as /32 or /128), with what it may no longer do. Expired rows are
-- ignored by every lookup (and kept until deleted). The GiST index with inet_ops serves `ip >>= $1` (which ranges
-- contain this address) without reading the table.
CREATE TABLE ip_blocks (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  ip cidr NOT NULL,
  severity text NOT NULL CHECK (severity IN ('sign_up_requires_approval', 'sign_up_block', 'no_access')),
  comment text NOT NULL DEFAULT '',
  expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX ip_blocks_ip ON ip_blocks (ip);
CREATE INDEX ip_blocks_range ON ip_blocks USING gist (ip inet_ops);

-- An e-mail domain nobody may sign up with (nor any domain below it); stored normalised (lower case, ASCII).
CREATE TABLE email_domain_blocks (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  domain text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- The SHA-256 (hex) of an address in canonical form (lower case, dots and +suffix of the local part removed).
CREATE TABLE canonical_email_blocks (
  id bigint PRIMARY KEY DEFAULT timestamp_id(),
  canonical_email_hash text NOT NULL UNIQUE,
  reference_account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE canonical_email_blocks;
DROP TABLE email_domain_blocks;
DROP TABLE ip_blocks;
