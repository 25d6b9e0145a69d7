import type { Queryable } from './db.ts';

/** Mastodon's Collection::MAX_ITEMS: pending and accepted items a collection may hold. */
export const COLLECTION_MAX_ITEMS = 25;
/** Collections a local account may have (Mastodon's per-role `collection_limit`; one figure for everyone here). */
export const COLLECTIONS_PER_ACCOUNT = 10;

export type CollectionItemState = 'pending' | 'accepted' | 'rejected' | 'revoked';

export interface CollectionRow {
  id: string;
  account_id: string;
  name: string;
  description: string | null;
  language: string | null;
  sensitive: boolean;
  discoverable: boolean;
  tag_id: string | null;
  /** The tag's name, read with the collection. */
  tag_name: string | null;
  local: boolean;
  uri: string | null;
  /** The owner's username (its domain for another server's), read with the collection: our collections' uris use it. */
  owner_username: string;
  item_count: number;
  created_at: Date;
  updated_at: Date;
}

export interface CollectionItemRow {
  id: string;
  collection_id: string;
  account_id: string;
  position: number;
  state: CollectionItemState;
  created_at: Date;
}

const COLUMNS = `c.id, c.account_id, c.name, c.description, c.language, c.sensitive, c.discoverable, c.tag_id, t.name AS tag_name,
  c.local, c.uri, o.username AS owner_username, c.item_count, c.created_at, c.updated_at`;
const FROM = `collections c JOIN accounts o ON o.id = c.account_id LEFT JOIN tags t ON t.id = c.tag_id`;
const ITEM_COLUMNS = `id, collection_id, account_id, position, state, created_at`;

export interface CollectionFields {
  name: string;
  description: string | null;
  language: string | null;
  sensitive: boolean;
  discoverable: boolean;
  tagId: string | null;
}

/** The id of the tag of this name, made if nobody used it yet. */
export async function tagIdFor(db: Queryable, name: string): Promise<string> {
  await db.query(`INSERT INTO tags (name) VALUES ($1) ON CONFLICT (lower(name)) DO NOTHING`, [name]);
  const { rows } = await db.query<{ id: string }>(`SELECT id::text FROM tags WHERE lower(name) = lower($1)`, [name]);
  return rows[0]!.id;
}

/**
 * Makes a collection for accountId, or null when the account already has COLLECTIONS_PER_ACCOUNT. Taken under a lock
 * on the account, so racing requests cannot pass the limit.
 */
export async function insertCollection(db: Queryable, accountId: string, f: CollectionFields): Promise<string | null> {
  await db.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [accountId]);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO collections (account_id, name, description, language, sensitive, discoverable, tag_id)
     SELECT $1, $2, $3, $4, $5, $6, $7
      WHERE (SELECT count(*) FROM (SELECT 1 FROM collections WHERE account_id = $1 LIMIT ${COLLECTIONS_PER_ACCOUNT}) x) < ${COLLECTIONS_PER_ACCOUNT}
     RETURNING id::text`,
    [accountId, f.name, f.description, f.language, f.sensitive, f.discoverable, f.tagId],
  );
  return rows[0]?.id ?? null;
}

/** Changes a collection's fields; the previous name and description, or null when there is no such collection. */
export async function updateCollection(db: Queryable, id: string, f: CollectionFields): Promise<{ name: string; description: string | null } | null> {
  const { rows } = await db.query<{ name: string; description: string | null }>(
    `UPDATE collections n SET name = $2, description = $3, language = $4, sensitive = $5, discoverable = $6, tag_id = $7, updated_at = now()
       FROM collections o WHERE n.id = $1 AND o.id = n.id
     RETURNING o.name, o.description`,
    [id, f.name, f.description, f.language, f.sensitive, f.discoverable, f.tagId],
  );
  return rows[0] ?? null;
}

export async function deleteCollection(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM collections WHERE id = $1`, [id]);
  return rowCount === 1;
}

export async function findCollection(db: Queryable, id: string, lock = false): Promise<CollectionRow | null> {
  const { rows } = await db.query<CollectionRow>(`SELECT ${COLUMNS} FROM ${FROM} WHERE c.id = $1${lock ? ' FOR UPDATE OF c' : ''}`, [id]);
  return rows[0] ?? null;
}

export async function findCollectionsByIds(db: Queryable, ids: string[]): Promise<CollectionRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<CollectionRow>(`SELECT ${COLUMNS} FROM ${FROM} WHERE c.id = ANY($1::bigint[]) LIMIT ${Math.max(ids.length, 1)}`, [ids]);
  return rows;
}

/** An account's collections, newest first, by offset (Mastodon pages these by offset); only discoverable ones unless `all`. */
export async function collectionsOf(db: Queryable, accountId: string, all: boolean, offset: number, limit: number): Promise<CollectionRow[]> {
  const { rows } = await db.query<CollectionRow>(
    `SELECT ${COLUMNS} FROM ${FROM} WHERE c.account_id = $1 AND ($2 OR c.discoverable)
      ORDER BY c.created_at DESC, c.id DESC OFFSET $3 LIMIT $4`,
    [accountId, all, offset, limit],
  );
  return rows;
}

/** Collections that feature accountId (its accepted items), newest first, by offset. */
export async function collectionsFeaturing(db: Queryable, accountId: string, offset: number, limit: number): Promise<CollectionRow[]> {
  const { rows } = await db.query<CollectionRow>(
    `SELECT ${COLUMNS} FROM collection_items i JOIN collections c ON c.id = i.collection_id JOIN accounts o ON o.id = c.account_id LEFT JOIN tags t ON t.id = c.tag_id
      WHERE i.account_id = $1 AND i.state = 'accepted'
      ORDER BY i.collection_id DESC OFFSET $2 LIMIT $3`,
    [accountId, offset, limit],
  );
  return rows;
}

/**
 * The items of these collections as viewerId sees them (Mastodon's Collection#items_for): its owner sees pending and
 * accepted items, others accepted ones; accounts the viewer blocks are left out. By position; bounded by the item cap.
 */
export async function itemsOf(db: Queryable, collections: Pick<CollectionRow, 'id' | 'account_id'>[], viewerId: string | null): Promise<Map<string, CollectionItemRow[]>> {
  const out = new Map<string, CollectionItemRow[]>(collections.map((c) => [c.id, []]));
  if (collections.length === 0) return out;
  const owned = collections.filter((c) => c.account_id === viewerId).map((c) => c.id);
  const { rows } = await db.query<CollectionItemRow>(
    `SELECT i.id, i.collection_id, i.account_id, i.position, i.state, i.created_at FROM collection_items i
      WHERE i.collection_id = ANY($1::bigint[])
        AND (i.state = 'accepted' OR (i.state = 'pending' AND i.collection_id = ANY($2::bigint[])))
        AND ($3::bigint IS NULL OR NOT EXISTS (SELECT 1 FROM blocks b WHERE b.account_id = $3 AND b.target_account_id = i.account_id))
      ORDER BY i.collection_id, i.position LIMIT $4`,
    [collections.map((c) => c.id), owned, viewerId, collections.length * (COLLECTION_MAX_ITEMS + 1)],
  );
  for (const r of rows) out.get(r.collection_id)!.push(r);
  return out;
}

/**
 * Adds an account to a locked collection (see findCollection's `lock`), at the next position; null when it is there
 * already or the collection holds COLLECTION_MAX_ITEMS pending or accepted items.
 */
export async function insertItem(db: Queryable, collectionId: string, accountId: string, state: CollectionItemState): Promise<CollectionItemRow | null | 'full'> {
  const { rows: counts } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM collection_items WHERE collection_id = $1 AND state IN ('pending', 'accepted') LIMIT ${COLLECTION_MAX_ITEMS}) x`,
    [collectionId],
  );
  if (counts[0]!.n >= COLLECTION_MAX_ITEMS) return 'full';
  const { rows } = await db.query<CollectionItemRow>(
    `INSERT INTO collection_items (collection_id, account_id, state, position)
     VALUES ($1, $2, $3, coalesce((SELECT max(position) FROM collection_items WHERE collection_id = $1), 0) + 1)
     ON CONFLICT (collection_id, account_id) DO NOTHING
     RETURNING ${ITEM_COLUMNS}`,
    [collectionId, accountId, state],
  );
  if (!rows[0]) return null;
  await db.query(`UPDATE collections SET item_count = item_count + 1 WHERE id = $1`, [collectionId]);
  return rows[0];
}

export async function findItem(db: Queryable, collectionId: string, itemId: string): Promise<CollectionItemRow | null> {
  const { rows } = await db.query<CollectionItemRow>(`SELECT ${ITEM_COLUMNS} FROM collection_items WHERE id = $1 AND collection_id = $2`, [itemId, collectionId]);
  return rows[0] ?? null;
}

export async function deleteItem(db: Queryable, collectionId: string, itemId: string): Promise<CollectionItemRow | null> {
  const { rows } = await db.query<CollectionItemRow>(`DELETE FROM collection_items WHERE id = $1 AND collection_id = $2 RETURNING ${ITEM_COLUMNS}`, [itemId, collectionId]);
  if (!rows[0]) return null;
  await db.query(`UPDATE collections SET item_count = greatest(item_count - 1, 0) WHERE id = $1`, [collectionId]);
  return rows[0];
}

export async function setItemState(db: Queryable, itemId: string, state: CollectionItemState): Promise<void> {
  await db.query(`UPDATE collection_items SET state = $2, updated_at = now() WHERE id = $1`, [itemId, state]);
}

/** The local accounts with an accepted item in the collection (those told of its changes), bounded by the item cap. */
export async function acceptedLocalMembers(db: Queryable, collectionId: string): Promise<string[]> {
  const { rows } = await db.query<{ account_id: string }>(
    `SELECT i.account_id FROM collection_items i JOIN accounts a ON a.id = i.account_id
      WHERE i.collection_id = $1 AND i.state = 'accepted' AND a.domain IS NULL ORDER BY i.position LIMIT ${COLLECTION_MAX_ITEMS}`,
    [collectionId],
  );
  return rows.map((r) => r.account_id);
}

// Collections across servers (federation/collections.ts).

export async function findCollectionByUri(db: Queryable, uri: string): Promise<CollectionRow | null> {
  const { rows } = await db.query<CollectionRow>(`SELECT ${COLUMNS} FROM ${FROM} WHERE c.uri = $1`, [uri]);
  return rows[0] ?? null;
}

/** Stores (or refreshes) another server's collection under its uri, for its owner; its id and whether it is new. */
export async function upsertRemoteCollection(db: Queryable, accountId: string, uri: string, f: CollectionFields): Promise<{ id: string; created: boolean; changed: boolean }> {
  const { rows } = await db.query<{ id: string; created: boolean; changed: boolean }>(
    `WITH old AS (SELECT id, name, description FROM collections WHERE uri = $2 AND account_id = $1)
     INSERT INTO collections (account_id, uri, local, name, description, language, sensitive, discoverable, tag_id)
     VALUES ($1, $2, false, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (uri) WHERE uri IS NOT NULL DO UPDATE SET name = $3, description = $4, language = $5, sensitive = $6, discoverable = $7, tag_id = $8, updated_at = now()
       WHERE collections.account_id = $1
     RETURNING id::text, (SELECT count(*) = 0 FROM old) AS created,
       coalesce((SELECT old.name IS DISTINCT FROM $3 OR old.description IS DISTINCT FROM $4 FROM old), false) AS changed`,
    [accountId, uri, f.name, f.description, f.language, f.sensitive, f.discoverable, f.tagId],
  );
  if (!rows[0]) throw new Error(`collection ${uri} belongs to another account`);
  return rows[0];
}

/** The pending and accepted items of a collection with what federation names them by, by position. */
export interface FederatedItemRow extends CollectionItemRow {
  uri: string | null;
  activity_uri: string | null;
  approval_uri: string | null;
  account_username: string;
  account_domain: string | null;
  account_uri: string | null;
  account_bot: boolean;
}

const FEDERATED_ITEM_COLUMNS = `i.id, i.collection_id, i.account_id, i.position, i.state, i.created_at, i.uri, i.activity_uri, i.approval_uri,
  a.username AS account_username, a.domain AS account_domain, a.uri AS account_uri, a.bot AS account_bot`;

export async function federatedItems(db: Queryable, collectionId: string, states: CollectionItemState[] = ['accepted']): Promise<FederatedItemRow[]> {
  const { rows } = await db.query<FederatedItemRow>(
    `SELECT ${FEDERATED_ITEM_COLUMNS} FROM collection_items i JOIN accounts a ON a.id = i.account_id
      WHERE i.collection_id = $1 AND i.state = ANY($2::text[]) ORDER BY i.position LIMIT ${COLLECTION_MAX_ITEMS * 6}`,
    [collectionId, states],
  );
  return rows;
}

export async function findFederatedItem(db: Queryable, itemId: string): Promise<FederatedItemRow | null> {
  const { rows } = await db.query<FederatedItemRow>(
    `SELECT ${FEDERATED_ITEM_COLUMNS} FROM collection_items i JOIN accounts a ON a.id = i.account_id WHERE i.id = $1`, [itemId],
  );
  return rows[0] ?? null;
}

/** The item a FeatureRequest of ours asked for, by the request's id. */
export async function findItemByActivityUri(db: Queryable, activityUri: string): Promise<CollectionItemRow | null> {
  const { rows } = await db.query<CollectionItemRow>(`SELECT ${ITEM_COLUMNS} FROM collection_items WHERE activity_uri = $1`, [activityUri]);
  return rows[0] ?? null;
}

/** The item a remote account's FeatureAuthorization approved, by the authorization's id. */
export async function findItemByApprovalUri(db: Queryable, approvalUri: string): Promise<CollectionItemRow | null> {
  const { rows } = await db.query<CollectionItemRow>(`SELECT ${ITEM_COLUMNS} FROM collection_items WHERE approval_uri = $1 LIMIT 1`, [approvalUri]);
  return rows[0] ?? null;
}

export async function setItemActivityUri(db: Queryable, itemId: string, activityUri: string): Promise<void> {
  await db.query(`UPDATE collection_items SET activity_uri = $2 WHERE id = $1`, [itemId, activityUri]);
}

/** An answer to our FeatureRequest: accepted (with the authorization's uri) or rejected. */
export async function answerItem(db: Queryable, itemId: string, state: 'accepted' | 'rejected', approvalUri: string | null): Promise<void> {
  await db.query(`UPDATE collection_items SET state = $2, approval_uri = $3, updated_at = now() WHERE id = $1 AND state = 'pending'`, [itemId, state, approvalUri]);
}

/**
 * Makes a remote collection's items these (Mastodon keeps the items its server lists, in its order): listed items no
 * longer listed go, listed ones are added or moved; states are as given. An item its server has not listed yet (one
 * of ours that accepted a FeatureRequest) stays. Bounded by the caller (at most the item cap).
 */
export async function replaceRemoteItems(db: Queryable, collectionId: string, items: { uri: string | null; accountId: string; position: number; state: CollectionItemState; approvalUri: string | null }[]): Promise<string[]> {
  await db.query(`DELETE FROM collection_items WHERE collection_id = $1 AND uri IS NOT NULL AND NOT (account_id = ANY($2::bigint[]))`, [collectionId, items.map((i) => i.accountId)]);
  const added: string[] = [];
  for (const i of items) {
    const { rows } = await db.query<{ account_id: string; inserted: boolean }>(
      `INSERT INTO collection_items (collection_id, account_id, position, state, uri, approval_uri)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (collection_id, account_id) DO UPDATE SET position = $3, uri = coalesce($5, collection_items.uri),
         state = CASE WHEN collection_items.state = 'accepted' THEN 'accepted' ELSE $4 END,
         approval_uri = coalesce($6, collection_items.approval_uri), updated_at = now()
       RETURNING account_id::text, (xmax = 0) AS inserted`,
      [collectionId, i.accountId, i.position, i.state, i.uri, i.approvalUri],
    );
    if (rows[0]?.inserted) added.push(rows[0].account_id);
  }
  await db.query(`UPDATE collections SET item_count = (SELECT count(*) FROM collection_items WHERE collection_id = $1 AND state IN ('pending', 'accepted')) WHERE id = $1`, [collectionId]);
  return added;
}

/** A local account's accepted item in a remote collection (a FeatureRequest it approved), made or found. */
export async function acceptRemoteItem(db: Queryable, collectionId: string, accountId: string, activityUri: string): Promise<{ item: CollectionItemRow; created: boolean }> {
  const { rows } = await db.query<CollectionItemRow & { created: boolean }>(
    `INSERT INTO collection_items (collection_id, account_id, state, activity_uri, position)
     VALUES ($1, $2, 'accepted', $3, coalesce((SELECT max(position) FROM collection_items WHERE collection_id = $1), 0) + 1)
     ON CONFLICT (collection_id, account_id) DO UPDATE SET state = 'accepted', activity_uri = $3, updated_at = now()
     RETURNING ${ITEM_COLUMNS}, (xmax = 0) AS created`,
    [collectionId, accountId, activityUri],
  );
  await db.query(`UPDATE collections SET item_count = (SELECT count(*) FROM collection_items WHERE collection_id = $1 AND state IN ('pending', 'accepted')) WHERE id = $1`, [collectionId]);
  const { created, ...item } = rows[0]!;
  return { item, created };
}

export async function deleteRemoteCollection(db: Queryable, accountId: string, uri: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM collections WHERE uri = $1 AND account_id = $2 AND NOT local`, [uri, accountId]);
  return rowCount === 1;
}

/** Removes the item of a remote collection named by its uri (its owner's Remove). */
export async function deleteRemoteItem(db: Queryable, collectionId: string, itemUri: string): Promise<CollectionItemRow | null> {
  const { rows } = await db.query<CollectionItemRow>(`DELETE FROM collection_items WHERE collection_id = $1 AND uri = $2 RETURNING ${ITEM_COLUMNS}`, [collectionId, itemUri]);
  if (rows[0]) await db.query(`UPDATE collections SET item_count = greatest(item_count - 1, 0) WHERE id = $1`, [collectionId]);
  return rows[0] ?? null;
}

/** A local account's collections as its actor lists them: discoverable ones, newest first, bounded by the limit. */
export async function publishedCollectionsOf(db: Queryable, accountId: string): Promise<CollectionRow[]> {
  return collectionsOf(db, accountId, false, 0, COLLECTIONS_PER_ACCOUNT);
}
