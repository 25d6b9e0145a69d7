/**
 * Activity types a sender uses without defining them in its JSON-LD context. snac sends its emoji reactions as
 * `EmojiReact` (LitePub's type, which Pleroma and Akkoma define in their context) under ActivityStreams' context alone,
 * and its Undo of one the same way: JSON-LD leaves such a type undefined, and Fedify then drops the activity as of an
 * unknown type. Mastodon reads `type` by its plain name whatever the context, so the received activity's context
 * gains the definition it lacks (LitePub's IRI for the name), as it is queued: its HTTP signature was checked on the
 * bytes as received. Activities signed in their body (Linked Data signatures, integrity proofs) are left as sent.
 */

type Json = Record<string, unknown>;

/** The types read by their plain name, and their IRIs. */
const UNDECLARED: Record<string, string> = { EmojiReact: 'http://litepub.social/ns#EmojiReact' };
const LITEPUB = /^https?:\/\/litepub\.social\/ns/;

const isJson = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const typesOf = (node: unknown): string[] => {
  if (!isJson(node)) return [];
  const t = node.type;
  return typeof t === 'string' ? [t] : Array.isArray(t) ? t.filter((x): x is string => typeof x === 'string') : [];
};

/** Whether a context (a URL, an object of definitions, or an array of them) defines `term`. */
function defines(context: unknown, term: string): boolean {
  if (typeof context === 'string') return LITEPUB.test(context);
  if (Array.isArray(context)) return context.some((c) => defines(c, term));
  return isJson(context) && term in context;
}

/**
 * Adds to `activity`'s context the definition of each type above that it or its inlined object uses without its
 * context defining it. Returns whether it changed anything.
 */
export function defineUndeclaredTypes(activity: unknown): boolean {
  if (!isJson(activity) || 'signature' in activity || 'proof' in activity) return false;
  const context = activity['@context'];
  if (context === undefined) return false;
  const used = [...typesOf(activity), ...typesOf(activity.object)];
  const missing = Object.keys(UNDECLARED).filter((term) => used.includes(term) && !defines(context, term));
  if (missing.length === 0) return false;
  const definitions = Object.fromEntries(missing.map((term) => [term, UNDECLARED[term]]));
  activity['@context'] = [...(Array.isArray(context) ? context : [context]), definitions];
  // An inlined object carrying its own context keeps it (JSON-LD scopes it to that object): give it the term too.
  if (isJson(activity.object) && activity.object['@context'] !== undefined) {
    const inner = activity.object['@context'];
    activity.object['@context'] = [...(Array.isArray(inner) ? inner : [inner]), definitions];
  }
  return true;
}
