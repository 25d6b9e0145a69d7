import { Create, Document, Note, Question, QuoteRequest, Update } from '@fedify/vocab';

/**
 * Mastodon's terms for an attachment's preview, which Fedify's vocabulary lacks: `blurhash` (the placeholder a
 * client draws while the file loads) and `focalPoint` ([x, y] from -1 to 1, the part of the picture a cropped preview
 * keeps). Mastodon, GoToSocial and Misskey read them by their plain names, defined in the sender's context as
 * Mastodon defines them.
 *
 * Fedify builds every document by expanding each object and compacting the whole once with the outermost object's
 * context, so: the attachment adds the terms to its expanded form (MediaDocument), and the outermost objects we send
 * or serve (a status's Note or Question, the Create, Update and QuoteRequest carrying it) add the definitions to
 * their context and give the terms their plain names. A document Fedify signs (an integrity proof) is this same
 * compacted form, so what is signed is what is sent.
 */

const TOOT = 'http://joinmastodon.org/ns#';
const DEFINITIONS = { blurhash: 'toot:blurhash', focalPoint: { '@container': '@list', '@id': 'toot:focalPoint' } };

type Json = Record<string, unknown>;
type DocumentValues = ConstructorParameters<typeof Document>[0];
type DocumentOptions = ConstructorParameters<typeof Document>[1];

export interface PreviewTerms {
  blurhash?: string | null;
  /** [x, y], each from -1 to 1; left out when null. */
  focalPoint?: readonly [number, number] | null;
}

/** A Document with Mastodon's `blurhash` and `focalPoint`. */
export class MediaDocument extends Document {
  readonly blurhash: string | null;
  readonly focalPoint: readonly [number, number] | null;

  constructor(values: DocumentValues & PreviewTerms, options?: DocumentOptions) {
    const { blurhash, focalPoint, ...rest } = values;
    super(rest, options);
    this.blurhash = blurhash ?? null;
    this.focalPoint = focalPoint ?? null;
  }

  override clone(values: DocumentValues & PreviewTerms = {}, options?: DocumentOptions): MediaDocument {
    const { blurhash, focalPoint, ...rest } = values;
    const clone = super.clone(rest, options) as MediaDocument;
    (clone as { blurhash: string | null }).blurhash = blurhash !== undefined ? blurhash : this.blurhash;
    (clone as { focalPoint: readonly [number, number] | null }).focalPoint = focalPoint !== undefined ? focalPoint : this.focalPoint;
    return clone;
  }

  // Fedify's short cut for an object alone skips the expansion this class adds its terms to.
  override isCompactable(): boolean {
    return this.blurhash === null && this.focalPoint === null && super.isCompactable();
  }

  override async toJsonLd(options: Parameters<Document['toJsonLd']>[0] = {}): Promise<unknown> {
    const json = await super.toJsonLd(options);
    if (this.blurhash === null && this.focalPoint === null) return json;
    if (options.format === 'expand') {
      // The expanded node: [{ "@type": [...], ... }].
      const node = (json as Json[])[0]!;
      if (this.blurhash !== null) node[`${TOOT}blurhash`] = [{ '@value': this.blurhash }];
      if (this.focalPoint !== null) node[`${TOOT}focalPoint`] = [{ '@list': this.focalPoint.map((v) => ({ '@value': v })) }];
      return json;
    }
    // Compacted on its own (with its own context).
    const compact = json as Json;
    if (this.blurhash !== null) compact.blurhash = this.blurhash;
    if (this.focalPoint !== null) compact.focalPoint = [...this.focalPoint];
    compact['@context'] = withDefinitions(compact['@context']);
    return compact;
  }
}

function withDefinitions(context: unknown): unknown[] {
  const list = context === undefined ? [] : Array.isArray(context) ? context : [context];
  return [...list, { toot: TOOT, ...DEFINITIONS }];
}

/**
 * In a compacted document, the terms under their IRI or prefixed name (how JSON-LD compacts them without a
 * definition) given their plain names; whether any was found.
 */
function plainTerms(node: unknown): boolean {
  if (Array.isArray(node)) return node.map(plainTerms).some(Boolean);
  if (node === null || typeof node !== 'object') return false;
  const json = node as Json;
  let found = false;
  for (const key of Object.keys(json)) {
    if (key === '@context') continue;
    const term = key === 'toot:blurhash' || key === `${TOOT}blurhash` ? 'blurhash' : key === 'toot:focalPoint' || key === `${TOOT}focalPoint` ? 'focalPoint' : null;
    if (term) {
      const value = json[key];
      delete json[key];
      // A list compacts to { "@list": [...] } under a term not declared as one.
      json[term] = term === 'focalPoint' && value !== null && typeof value === 'object' && '@list' in value ? (value as { '@list': unknown })['@list'] : value;
      found = true;
    } else if (plainTerms(json[key])) found = true;
  }
  return found;
}

type Serialisable = abstract new (...args: any[]) => { toJsonLd(options?: any): Promise<unknown> };

/** `Base`, whose compacted form names the preview terms as Mastodon does when an attachment carries them. */
function withPreviewTerms<C extends Serialisable>(Base: C) {
  abstract class WithPreviewTerms extends Base {
    override async toJsonLd(options: { format?: string } = {}): Promise<unknown> {
      const json = await super.toJsonLd(options);
      if (options.format === 'expand' || json === null || typeof json !== 'object' || Array.isArray(json)) return json;
      const compact = json as Json;
      if (plainTerms(compact)) compact['@context'] = withDefinitions(compact['@context']);
      return compact;
    }
  }
  return WithPreviewTerms;
}

// The classes below are Fedify's, concrete: the mixin's abstract signature is only for typing it once.
export const StatusNote = withPreviewTerms(Note) as unknown as typeof Note;
export const StatusQuestion = withPreviewTerms(Question) as unknown as typeof Question;
export const StatusCreate = withPreviewTerms(Create) as unknown as typeof Create;
export const StatusUpdate = withPreviewTerms(Update) as unknown as typeof Update;
export const StatusQuoteRequest = withPreviewTerms(QuoteRequest) as unknown as typeof QuoteRequest;
