import type { EmojiRow } from './custom-emojis.ts';
import type { JsonWebKey } from 'node:crypto';
import type { Queryable } from './db.ts';

export interface AccountRow {
  id: string;
  username: string;
  domain: string | null;
  display_name: string;
  note_source: string;
  note_html: string;
  fields: ProfileField[];
  locked: boolean;
  bot: boolean;
  /** A remote actor's ActivityPub type (Person, Group, Service…); null for local accounts. */
  actor_type: string | null;
  discoverable: boolean | null;
  indexable: boolean;
  hide_collections: boolean;
  avatar_file: string | null;
  avatar_content_type: string | null;
  header_file: string | null;
  header_content_type: string | null;
  /** Alt text of the avatar and header images ('' for none). */
  avatar_description: string;
  header_description: string;
  /** The person asked search engines not to index their pages. */
  noindex: boolean;
  /** The author discloses the application a status was posted from to everyone (Mastodon's show_application). */
  show_application: boolean;
  uri: string | null;
  url: string | null;
  inbox_url: string | null;
  shared_inbox_url: string | null;
  public_key_pem: string | null;
  avatar_remote_url: string | null;
  header_remote_url: string | null;
  followers_url: string | null;
  fetched_at: Date | null;
  followers_count: number;
  following_count: number;
  statuses_count: number;
  last_status_at: Date | null;
  suspended_at: Date | null;
  /** Its data removed for good (storage/account-deletion.ts): a local name reserved, a remote actor's tombstone. */
  deleted_at: Date | null;
  /** Limited by a moderator: kept out of public timelines (storage/moderation.ts). */
  silenced_at: Date | null;
  /** Its media is always shown as sensitive. */
  sensitized_at: Date | null;
  /** Actor ids this account says are also it (ActivityPub alsoKnownAs; services/account-migration.ts). */
  also_known_as: string[];
  /** The account it moved to, and that account's row (without keys) as it was read with this one. */
  moved_to_account_id: string | null;
  moved_to: MovedToRow | null;
  created_at: Date;
  updated_at: Date;
  /**
   * The custom emoji its name, bio and fields use, when resolved (services/custom-emojis.ts withAccountEmojis; the
   * status loader's cached accounts have them); never read from its table.
   */
  emojis?: EmojiRow[];
  /** Its user's role when that role is shown on profiles (highlighted); absent where a query does not read it. */
  role?: { id: string; name: string; color: string } | null;
}

/** The account moved to, read along with the moved one (for its `moved` entity); dates revived by movedTarget. */
export type MovedToRow = Omit<AccountRow, 'moved_to'>;

export interface ProfileField {
  name: string;
  value: string;
  value_html: string;
  verified_at: string | null;
}

// The account a moved one moved to, as JSON (ids as text, keys left out); nothing is looked up for the rest.
const MOVED_TO = `(SELECT to_jsonb(m) - 'private_key_pem' - 'ed25519_private_jwk' - 'ed25519_public_jwk' - 'public_key_pem'
    || jsonb_build_object('id', m.id::text, 'moved_to_account_id', m.moved_to_account_id::text)
    FROM accounts m WHERE m.id = accounts.moved_to_account_id) AS moved_to`;

// A local account's highlighted role, as its profile shows it (Mastodon's Account `roles`).
const ROLE = `(SELECT jsonb_build_object('id', r.id::text, 'name', r.name, 'color', r.color)
    FROM users u JOIN user_roles r ON r.id = u.role_id WHERE u.account_id = accounts.id AND r.highlighted) AS role`;

// Every column but the private key: that one is read only where a request is signed.
const COLUMNS = `id, username, domain, display_name, note_source, note_html, fields, locked, bot, actor_type,
  discoverable, indexable, hide_collections, avatar_file, avatar_content_type, header_file, header_content_type,
  avatar_description, header_description, noindex, show_application,
  uri, url, inbox_url, shared_inbox_url, public_key_pem, avatar_remote_url, header_remote_url, followers_url, fetched_at,
  followers_count, following_count,
  statuses_count, last_status_at, suspended_at, deleted_at, silenced_at, sensitized_at, also_known_as, moved_to_account_id, created_at, updated_at,
  ${MOVED_TO}, ${ROLE}`;

export async function findAccountById(db: Queryable, id: string): Promise<AccountRow | null> {
  // Among the commonest queries (a post's author, a job's account): prepared once per connection.
  const { rows } = await db.query<AccountRow>({ name: 'account-by-id', text: `SELECT ${COLUMNS} FROM accounts WHERE id = $1`, values: [id] });
  return rows[0] ?? null;
}

export async function findAccountsByIds(db: Queryable, ids: string[]): Promise<AccountRow[]> {
  if (ids.length === 0) return [];
  // One id (a post's author, as its fan-out renders it) by the statement PostgreSQL plans once per connection: with
  // an array parameter it judges a custom plan cheaper every time and plans the statement again at each call.
  if (ids.length === 1) {
    const one = await findAccountById(db, ids[0]!);
    return one ? [one] : [];
  }
  const { rows } = await db.query<AccountRow>({ name: 'accounts-by-ids', text: `SELECT ${COLUMNS} FROM accounts WHERE id = ANY($1::bigint[])`, values: [ids] });
  return rows;
}

/** domain null finds a local account. Case-insensitive, as usernames are. */
export async function findAccountByUsername(db: Queryable, username: string, domain: string | null): Promise<AccountRow | null> {
  const { rows } = await db.query<AccountRow>(
    `SELECT ${COLUMNS} FROM accounts
      WHERE lower(username) = lower($1) AND coalesce(lower(domain), '') = coalesce(lower($2), '')`,
    [username, domain],
  );
  return rows[0] ?? null;
}

export async function usernameTaken(db: Queryable, username: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `SELECT 1 FROM accounts WHERE lower(username) = lower($1) AND domain IS NULL`,
    [username],
  );
  return (rowCount ?? 0) > 0;
}

export interface NewLocalAccount {
  username: string;
  displayName?: string;
}

/** A local account, without keys yet: they are made when it first needs them (federation/keys.ts). */
export async function insertLocalAccount(db: Queryable, a: NewLocalAccount): Promise<AccountRow> {
  const { rows } = await db.query<AccountRow>(
    `INSERT INTO accounts (username, display_name) VALUES ($1, $2) RETURNING ${COLUMNS}`,
    [a.username, a.displayName ?? ''],
  );
  return rows[0]!;
}

export interface ProfileChanges {
  displayName?: string;
  noteSource?: string;
  noteHtml?: string;
  locked?: boolean;
  bot?: boolean;
  discoverable?: boolean;
  indexable?: boolean;
  hideCollections?: boolean;
  fields?: ProfileField[];
  avatarFile?: string | null;
  avatarContentType?: string | null;
  headerFile?: string | null;
  headerContentType?: string | null;
  avatarDescription?: string;
  headerDescription?: string;
  noindex?: boolean;
  showApplication?: boolean;
}

const PROFILE_COLUMNS: Record<keyof ProfileChanges, string> = {
  displayName: 'display_name',
  noteSource: 'note_source',
  noteHtml: 'note_html',
  locked: 'locked',
  bot: 'bot',
  discoverable: 'discoverable',
  indexable: 'indexable',
  hideCollections: 'hide_collections',
  fields: 'fields',
  avatarFile: 'avatar_file',
  avatarContentType: 'avatar_content_type',
  headerFile: 'header_file',
  headerContentType: 'header_content_type',
  avatarDescription: 'avatar_description',
  headerDescription: 'header_description',
  noindex: 'noindex',
  showApplication: 'show_application',
};

export interface ProfileUpdateResult {
  account: AccountRow;
  /** The image keys the row held just before this update (read under a row lock), so replaced files can be removed. */
  previous: Pick<AccountRow, 'avatar_file' | 'header_file'>;
}

/** Run inside a transaction: the row stays locked from reading the previous images until commit. */
export async function updateProfile(db: Queryable, id: string, changes: ProfileChanges): Promise<ProfileUpdateResult> {
  const { rows: old } = await db.query<Pick<AccountRow, 'avatar_file' | 'header_file'>>(
    `SELECT avatar_file, header_file FROM accounts WHERE id = $1 FOR UPDATE`,
    [id],
  );
  const sets: string[] = [];
  const values: unknown[] = [id];
  for (const [key, column] of Object.entries(PROFILE_COLUMNS) as [keyof ProfileChanges, string][]) {
    const value = changes[key];
    if (value === undefined) continue;
    values.push(key === 'fields' ? JSON.stringify(value) : value);
    sets.push(`${column} = $${values.length}`);
  }
  sets.push('updated_at = now()');
  const { rows } = await db.query<AccountRow>(
    `UPDATE accounts SET ${sets.join(', ')} WHERE id = $1 RETURNING ${COLUMNS}`,
    values,
  );
  return { account: rows[0]!, previous: old[0]! };
}

/** A remote actor as we keep it: what its server says of it. */
export interface RemoteAccount {
  uri: string;
  username: string;
  domain: string;
  displayName: string;
  noteHtml: string;
  url: string | null;
  inboxUrl: string | null;
  sharedInboxUrl: string | null;
  outboxUrl: string | null;
  followersUrl: string | null;
  locked: boolean;
  bot: boolean;
  /** Its ActivityPub type (Person, Group, Service…). */
  actorType?: string | null;
  discoverable: boolean | null;
  avatarUrl: string | null;
  headerUrl: string | null;
  fields: ProfileField[];
  createdAt: Date | null;
  /** Its alsoKnownAs, and its movedTo (kept only when that account is known here; absent clears it). */
  alsoKnownAs?: string[];
  movedToUri?: string | null;
}

/**
 * Stores a remote actor, or refreshes the one with that ActivityPub id. Returns the row and whether anything shown
 * of it changed (so caches are told).
 */
export async function upsertRemoteAccount(db: Queryable, a: RemoteAccount): Promise<AccountRow> {
  const { rows } = await db.query<AccountRow>(
    `INSERT INTO accounts (uri, username, domain, display_name, note_html, url, inbox_url, shared_inbox_url, outbox_url,
                           followers_url, locked, bot, discoverable, avatar_remote_url, header_remote_url, fields,
                           created_at, fetched_at, also_known_as, moved_to_account_id, actor_type)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, coalesce($17, now()), now(), $18,
             (SELECT id FROM accounts WHERE uri = $19), $20)
     ON CONFLICT (uri) WHERE uri IS NOT NULL DO UPDATE SET
       display_name = $4, note_html = $5, url = $6, inbox_url = $7, shared_inbox_url = $8, outbox_url = $9,
       followers_url = $10, locked = $11, bot = $12, discoverable = $13, avatar_remote_url = $14,
       header_remote_url = $15, fields = $16,
       -- A copy of an image the actor no longer names is not shown (services/remote-media.ts copies the new one).
       avatar_file = CASE WHEN accounts.avatar_remote_url IS NOT DISTINCT FROM $14 THEN accounts.avatar_file END,
       header_file = CASE WHEN accounts.header_remote_url IS NOT DISTINCT FROM $15 THEN accounts.header_file END, fetched_at = now(), updated_at = now(), also_known_as = $18, actor_type = $20,
       moved_to_account_id = CASE WHEN $19::text IS NULL THEN NULL
         ELSE coalesce((SELECT id FROM accounts WHERE uri = $19), accounts.moved_to_account_id) END
     RETURNING ${COLUMNS}`,
    [a.uri, a.username, a.domain, a.displayName, a.noteHtml, a.url, a.inboxUrl, a.sharedInboxUrl, a.outboxUrl,
      a.followersUrl, a.locked, a.bot, a.discoverable, a.avatarUrl, a.headerUrl, JSON.stringify(a.fields), a.createdAt,
      a.alsoKnownAs ?? [], a.movedToUri ?? null, a.actorType ?? null],
  );
  return rows[0]!;
}

export async function findAccountByUri(db: Queryable, uri: string): Promise<AccountRow | null> {
  const { rows } = await db.query<AccountRow>(`SELECT ${COLUMNS} FROM accounts WHERE uri = $1`, [uri]);
  return rows[0] ?? null;
}

/**
 * A local account's signing keys: RSA as PEM, Ed25519 as JWK, each null until first needed (federation/keys.ts).
 * Accounts made before keys were made on need have their RSA pair from sign-up.
 */
export interface AccountKeys {
  public_key_pem: string | null;
  private_key_pem: string | null;
  ed25519_public_jwk: JsonWebKey | null;
  ed25519_private_jwk: JsonWebKey | null;
}

/** A local account's keys as stored (any may be null); null when there is no such local account. */
export async function localAccountKeys(db: Queryable, id: string): Promise<AccountKeys | null> {
  const { rows } = await db.query<AccountKeys>(
    `SELECT public_key_pem, private_key_pem, ed25519_public_jwk, ed25519_private_jwk
       FROM accounts WHERE id = $1 AND domain IS NULL`,
    [id],
  );
  return rows[0] ?? null;
}

/** Keeps the first RSA key pair saved for an account: two processes making one at once agree on the winner. */
export async function saveRsaKeys(db: Queryable, id: string, publicPem: string, privatePem: string): Promise<AccountKeys | null> {
  await db.query(
    `UPDATE accounts SET public_key_pem = $2, private_key_pem = $3 WHERE id = $1 AND domain IS NULL AND private_key_pem IS NULL`,
    [id, publicPem, privatePem],
  );
  return localAccountKeys(db, id);
}

/** Keeps the first Ed25519 key pair saved for an account: two processes making one at once agree on the winner. */
export async function saveEd25519Keys(db: Queryable, id: string, publicJwk: JsonWebKey, privateJwk: JsonWebKey): Promise<AccountKeys | null> {
  await db.query(
    `UPDATE accounts SET ed25519_public_jwk = $2, ed25519_private_jwk = $3 WHERE id = $1 AND ed25519_public_jwk IS NULL`,
    [id, JSON.stringify(publicJwk), JSON.stringify(privateJwk)],
  );
  return localAccountKeys(db, id);
}

/**
 * A remote actor deleted by its server: kept for the threads it took part in, shown suspended, and its follows in
 * both directions gone, with the counts they moved. Returns the local accounts whose counts changed.
 */
export async function markAccountGone(db: Queryable, id: string): Promise<string[]> {
  const { rowCount } = await db.query(`UPDATE accounts SET suspended_at = coalesce(suspended_at, now()) WHERE id = $1 AND domain IS NOT NULL`, [id]);
  if (rowCount !== 1) return [];
  const { rows } = await db.query<{ account_id: string; target_account_id: string }>(
    `DELETE FROM follows WHERE account_id = $1 OR target_account_id = $1 RETURNING account_id, target_account_id`, [id],
  );
  await db.query(`DELETE FROM follow_requests WHERE account_id = $1 OR target_account_id = $1`, [id]);
  const followed = rows.filter((r) => r.account_id === id).map((r) => r.target_account_id);
  const followers = rows.filter((r) => r.target_account_id === id).map((r) => r.account_id);
  if (followed.length > 0) await db.query(`UPDATE accounts SET followers_count = greatest(followers_count - 1, 0) WHERE id = ANY($1::bigint[])`, [followed]);
  if (followers.length > 0) await db.query(`UPDATE accounts SET following_count = greatest(following_count - 1, 0) WHERE id = ANY($1::bigint[])`, [followers]);
  return [...followed, ...followers];
}

/** Sets the actor ids a local account says are also it (alsoKnownAs). */
export async function setAlsoKnownAs(db: Queryable, id: string, uris: string[]): Promise<void> {
  await db.query(`UPDATE accounts SET also_known_as = $2, updated_at = now() WHERE id = $1`, [id, uris]);
}

/** Marks an account moved to another (null: its redirect is cancelled). */
export async function setMovedTo(db: Queryable, id: string, targetId: string | null): Promise<void> {
  await db.query(
    `UPDATE accounts SET moved_to_account_id = $2, moved_at = CASE WHEN $2::bigint IS NULL THEN NULL ELSE now() END, updated_at = now() WHERE id = $1`,
    [id, targetId],
  );
}

/** Revives the dates of the account a moved one moved to (read as JSON along with it). */
export function movedTarget(a: Pick<AccountRow, 'moved_to'>): AccountRow | null {
  const m = a.moved_to as (Record<string, unknown> & MovedToRow) | null | undefined;
  if (!m) return null;
  const date = (v: unknown) => (typeof v === 'string' ? new Date(v) : (v as Date | null));
  return {
    ...m, moved_to: null, also_known_as: m.also_known_as ?? [],
    created_at: date(m.created_at)!, updated_at: date(m.updated_at)!, last_status_at: date(m.last_status_at), suspended_at: date(m.suspended_at), deleted_at: date(m.deleted_at),
    silenced_at: date(m.silenced_at), sensitized_at: date(m.sensitized_at), fetched_at: date(m.fetched_at),
  };
}

/**
 * Marks the fields of an account whose value is one of `values` verified at `at` (a verified link, jobs/profile-links.ts),
 * in one statement: a field edited while its link was being checked has another value and is left as it is.
 * Returns whether any field changed.
 */
export async function markFieldsVerified(db: Queryable, accountId: string, values: string[], at: Date): Promise<boolean> {
  if (values.length === 0) return false;
  const { rowCount } = await db.query(
    `UPDATE accounts SET fields = (
        SELECT coalesce(jsonb_agg(CASE WHEN f->>'value' = ANY($2::text[]) AND f->>'verified_at' IS NULL
                                       THEN jsonb_set(f, '{verified_at}', to_jsonb($3::text)) ELSE f END ORDER BY n), '[]'::jsonb)
          FROM jsonb_array_elements(accounts.fields) WITH ORDINALITY AS e(f, n)), updated_at = now()
      WHERE id = $1 AND EXISTS (SELECT 1 FROM jsonb_array_elements(accounts.fields) f
                                 WHERE f->>'value' = ANY($2::text[]) AND f->>'verified_at' IS NULL)`,
    [accountId, values, at.toISOString()],
  );
  return (rowCount ?? 0) > 0;
}
