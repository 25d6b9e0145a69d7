import type { AppContext } from '../../context.ts';
import type { CollectionItemRow, CollectionRow } from '../../storage/collections.ts';
import { findCollectionsByIds, itemsOf } from '../../storage/collections.ts';

// Mastodon 4.6's Collection and CollectionItem entities (REST::CollectionSerializer, REST::CollectionItemSerializer).

/** A CollectionItem: its account only while pending or accepted. */
export function renderCollectionItem(i: CollectionItemRow) {
  return {
    id: i.id,
    state: i.state,
    created_at: i.created_at.toISOString(),
    ...(i.state === 'pending' || i.state === 'accepted' ? { account_id: i.account_id } : {}),
  };
}

/** A Collection with the items the viewer may see (see storage/collections.ts itemsOf). */
export function renderCollection(publicUrl: string, c: CollectionRow, items: CollectionItemRow[]) {
  const tag = c.tag_name ? c.tag_name.toLowerCase() : null;
  return {
    id: c.id,
    // Ours by our URL scheme (as other servers know it), others' as their server named it.
    uri: c.uri ?? `${publicUrl}/users/${c.owner_username}/featured_collections/${c.id}`,
    name: c.name,
    description: c.description,
    language: c.language,
    account_id: c.account_id,
    local: c.local,
    sensitive: c.sensitive,
    discoverable: c.discoverable,
    item_count: c.item_count,
    created_at: c.created_at.toISOString(),
    updated_at: c.updated_at.toISOString(),
    tag: tag ? { name: tag, url: `${publicUrl}/tags/${encodeURIComponent(tag)}` } : null,
    items: items.map(renderCollectionItem),
  };
}

/** Collections rendered for a viewer, their items read in one query. */
export async function renderCollections(ctx: AppContext, viewerId: string | null, rows: CollectionRow[]) {
  const items = await itemsOf(ctx.db, rows, viewerId);
  return rows.map((c) => renderCollection(ctx.config.publicUrl, c, items.get(c.id) ?? []));
}

/** The collections notifications name, rendered for their recipient, by id. */
export async function collectionsOfNotifications(ctx: AppContext, viewerId: string, ids: (string | null | undefined)[]): Promise<Map<string, ReturnType<typeof renderCollection>>> {
  const wanted = [...new Set(ids.filter((id): id is string => !!id))];
  const rows = await findCollectionsByIds(ctx.db, wanted);
  const rendered = await renderCollections(ctx, viewerId, rows);
  return new Map(rendered.map((c) => [c.id, c]));
}
