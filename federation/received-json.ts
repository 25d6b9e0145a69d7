/**
 * Objects as other servers wrote them. Fedify's vocabulary drops the terms a sender's JSON-LD context does not define
 * (Pixelfed sends `blurhash` without defining it; Mobilizon's Place carries a schema.org `address` Fedify has no
 * property for), and Mastodon reads those by their plain names whatever the context. So the JSON of what enters is
 * kept at hand, for federation/incoming-objects.ts to read those few terms from: the activities being handled (for
 * the duration of their handling), and a small bounded memory of what the last fetches returned (only the parts
 * read). Each is trusted as far as its origin: a node is taken only under an id of its document's origin.
 */

type Json = Record<string, unknown>;

/**
 * The received activities being handled. (Not an AsyncLocalStorage: Fedify's listener dispatch does not keep one's
 * context.) Several at once, as the queue runs tasks concurrently; a lookup reads only those of the object's origin.
 */
interface State { received: Set<Json>; fetched: Map<string, Json> }
// One per process, even where this module is loaded twice (under vitest, federation/ is loaded both through the test's
// module graph and through lazy.ts's require, and the fetch that remembers and the reader may be in either).
const state: State = ((globalThis as Record<symbol, State | undefined>)[Symbol.for('fedi.received-json')] ??= { received: new Set(), fetched: new Map() });
const received = state.received;

/**
 * Runs `handle` (the handling of a task of Fedify's queue) with, when the task is a received activity, its JSON as
 * sent at hand.
 */
export async function withReceivedJson<T>(task: unknown, handle: () => Promise<T>): Promise<T> {
  const activity = isJson(task) && task.type === 'inbox' ? task.activity : null;
  if (!isJson(activity)) return handle();
  received.add(activity);
  try {
    return await handle();
  } finally {
    received.delete(activity);
  }
}

/** Fetched objects' parts that are read again, by id: the last few hundred, each a few small fields. */
const FETCHED_MAX = 256;
const fetched = state.fetched;
/** What is kept of a fetched object: the terms Fedify may drop, and its place in the document (nested objects); and its `url` links' sizes. */
const KEPT = ['id', 'type', 'attachment', 'location'] as const;
const KEPT_MAX_CHARS = 16_384;

/**
 * Remembers the parts of a fetched document (and of the objects it inlines, of its own origin) that are read again,
 * when the document is what its URL names (`url` is the URL asked; its `id` must be that URL).
 */
export function rememberFetchedJson(url: string, document: unknown): void {
  if (!isJson(document) || document.id !== url || !URL.canParse(url)) return;
  const origin = new URL(url).origin;
  let node: unknown = document;
  for (let depth = 0; depth < 3 && isJson(node) && typeof node.id === 'string' && URL.canParse(node.id) && new URL(node.id).origin === origin; depth++) {
    const kept: Json = {};
    for (const key of KEPT) if (node[key] !== undefined) kept[key] = Array.isArray(node[key]) ? (node[key] as unknown[]).slice(0, 16) : node[key];
    // A Video's files (PeerTube): their sizes and kinds, which Fedify's Link does not keep.
    if (Array.isArray(node.url)) kept.url = node.url.slice(0, 32).map((u) => (isJson(u) ? { href: u.href, mediaType: u.mediaType, size: u.size, attachment: u.attachment } : u));
    fetched.delete(node.id);
    // A few kilobytes each at most: a document padded with megabytes of attachments is not kept in memory.
    if (JSON.stringify(kept).length <= KEPT_MAX_CHARS) fetched.set(node.id, kept);
    node = node.object;
  }
  while (fetched.size > FETCHED_MAX) fetched.delete(fetched.keys().next().value!);
}

/**
 * The JSON of the object with this id as its own server sent it: in an activity being handled (only one of the
 * object's origin, whose signer vouches for it), else in what was fetched from its id.
 */
export function sentJsonOf(id: string): Json | null {
  if (!URL.canParse(id)) return null;
  const origin = new URL(id).origin;
  for (const activity of received) {
    if (typeof activity.id !== 'string' || !URL.canParse(activity.id) || new URL(activity.id).origin !== origin) continue;
    const found = findById(activity, id, 4);
    if (found) return found;
  }
  return fetched.get(id) ?? null;
}

function findById(node: unknown, id: string, depth: number): Json | null {
  if (depth < 0 || node === null || typeof node !== 'object') return null;
  if (Array.isArray(node)) {
    for (const item of node.slice(0, 4)) {
      const found = findById(item, id, depth);
      if (found) return found;
    }
    return null;
  }
  const json = node as Json;
  if (json.id === id) return json;
  return findById(json.object, id, depth - 1);
}

function isJson(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
