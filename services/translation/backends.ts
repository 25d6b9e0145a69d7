import type { TranslationConfig } from '../../config.ts';

/**
 * The machine translation services Mastodon speaks to, spoken to as their documented APIs answer: DeepL
 * (`POST /v2/translate`, `GET /v2/languages`) and LibreTranslate (`POST /translate`, `GET /languages`). Texts go as
 * HTML, so markup (links, mentions, line breaks) comes back in place.
 */
export interface TranslatedText {
  text: string;
  /** What the service took the source to be, when it guessed it; null when told. */
  detectedSourceLanguage: string | null;
}

export interface TranslationBackend {
  /** The name clients show ("Translated from German by DeepL.com"). */
  readonly provider: string;
  translate(texts: string[], source: string | null, target: string): Promise<TranslatedText[]>;
  /** Source language -> the languages it can be translated into; `und` is "detect the source". */
  languages(): Promise<Record<string, string[]>>;
}

export type TranslationFailure = 'quota' | 'too_many_requests' | 'unexpected';

export class TranslationUnavailable extends Error {
  readonly failure: TranslationFailure;
  constructor(failure: TranslationFailure, why: string) {
    super(why);
    this.failure = failure;
  }
}

/** A service's answer is small JSON; anything larger is not an answer. */
const MAX_ANSWER_BYTES = 1024 * 1024;
const TIMEOUT_MS = 10_000;

async function requestJson(url: string, init: RequestInit, statusFailures: Record<number, TranslationFailure>): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (err) {
    throw new TranslationUnavailable('unexpected', `translation service unreachable: ${(err as Error).message}`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new TranslationUnavailable(statusFailures[res.status] ?? 'unexpected', `translation service answered ${res.status}`);
  }
  const body = await readAtMost(res, MAX_ANSWER_BYTES);
  try {
    return JSON.parse(body);
  } catch {
    throw new TranslationUnavailable('unexpected', 'translation service answered something other than JSON');
  }
}

async function readAtMost(res: Response, maxBytes: number): Promise<string> {
  const length = Number(res.headers.get('content-length'));
  if (Number.isFinite(length) && length > maxBytes) {
    await res.body?.cancel();
    throw new TranslationUnavailable('unexpected', 'translation service answer too large');
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new TranslationUnavailable('unexpected', 'translation service answer too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const malformed = () => new TranslationUnavailable('unexpected', 'translation service answered in an unexpected shape');

/** `EN-GB` -> `en-GB`, `ZH` -> `zh`: DeepL's codes in the shape Mastodon's languages have. */
function normalizeLanguage(code: string): string {
  const [language = '', region] = code.split(/[_-]/);
  return region ? `${language.toLowerCase()}-${region.toUpperCase()}` : language.toLowerCase();
}

class DeepL implements TranslationBackend {
  readonly provider = 'DeepL.com';
  private readonly apiUrl: string;
  private readonly apiKey: string;
  constructor(apiUrl: string, apiKey: string) {
    this.apiUrl = apiUrl;
    this.apiKey = apiKey;
  }

  private get headers() {
    return { authorization: `DeepL-Auth-Key ${this.apiKey}`, 'content-type': 'application/json', accept: 'application/json' };
  }

  async translate(texts: string[], source: string | null, target: string): Promise<TranslatedText[]> {
    const body = { text: texts, target_lang: target.toUpperCase(), tag_handling: 'html', ...(source ? { source_lang: source.toUpperCase() } : {}) };
    // 429: too many requests; 456: the plan's quota is used up (DeepL's documented codes).
    const data = await requestJson(`${this.apiUrl}/v2/translate`, { method: 'POST', headers: this.headers, body: JSON.stringify(body) }, { 429: 'too_many_requests', 456: 'quota' });
    if (!isRecord(data) || !Array.isArray(data.translations) || data.translations.length !== texts.length) throw malformed();
    return data.translations.map((t: unknown) => {
      if (!isRecord(t) || typeof t.text !== 'string') throw malformed();
      return { text: t.text, detectedSourceLanguage: typeof t.detected_source_language === 'string' ? normalizeLanguage(t.detected_source_language) : null };
    });
  }

  async languages(): Promise<Record<string, string[]>> {
    const [sources, targets] = await Promise.all([this.fetchLanguages('source'), this.fetchLanguages('target')]);
    // DeepL still takes EN and PT as targets but lists only their regional variants.
    const allTargets = [...new Set(['en', 'pt', ...targets])];
    const pairs: Record<string, string[]> = { und: allTargets };
    for (const source of sources) pairs[source] = allTargets.filter((t) => t !== source);
    return pairs;
  }

  private async fetchLanguages(type: 'source' | 'target'): Promise<string[]> {
    const data = await requestJson(`${this.apiUrl}/v2/languages?type=${type}`, { headers: this.headers }, { 429: 'too_many_requests', 456: 'quota' });
    if (!Array.isArray(data)) throw malformed();
    return data.map((l: unknown) => {
      if (!isRecord(l) || typeof l.language !== 'string') throw malformed();
      return normalizeLanguage(l.language);
    });
  }
}

class LibreTranslate implements TranslationBackend {
  readonly provider = 'LibreTranslate';
  private readonly endpoint: string;
  private readonly apiKey: string;
  constructor(endpoint: string, apiKey: string) {
    this.endpoint = endpoint;
    this.apiKey = apiKey;
  }

  async translate(texts: string[], source: string | null, target: string): Promise<TranslatedText[]> {
    const body = { q: texts, source: source ?? 'auto', target, format: 'html', ...(this.apiKey ? { api_key: this.apiKey } : {}) };
    // 403: a key that is refused or out of quota; 429: too many requests (LibreTranslate's documented codes).
    const data = await requestJson(`${this.endpoint}/translate`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) }, { 403: 'quota', 429: 'too_many_requests' });
    if (!isRecord(data) || !Array.isArray(data.translatedText) || data.translatedText.length !== texts.length) throw malformed();
    const detected = Array.isArray(data.detectedLanguage) ? data.detectedLanguage : [];
    return data.translatedText.map((text: unknown, i: number) => {
      if (typeof text !== 'string') throw malformed();
      const guess: unknown = detected[i];
      return { text, detectedSourceLanguage: isRecord(guess) && typeof guess.language === 'string' ? normalizeLanguage(guess.language) : null };
    });
  }

  async languages(): Promise<Record<string, string[]>> {
    const data = await requestJson(`${this.endpoint}/languages`, { headers: { accept: 'application/json' } }, { 429: 'too_many_requests' });
    if (!Array.isArray(data)) throw malformed();
    const pairs: Record<string, string[]> = {};
    const every = new Set<string>();
    for (const l of data) {
      if (!isRecord(l) || typeof l.code !== 'string' || !Array.isArray(l.targets)) throw malformed();
      const targets = l.targets.filter((t): t is string => typeof t === 'string' && t !== l.code);
      pairs[l.code] = targets;
      for (const t of targets) every.add(t);
    }
    pairs.und = [...every];
    return pairs;
  }
}

export function translationBackend(config: TranslationConfig): TranslationBackend {
  return config.backend === 'deepl' ? new DeepL(config.apiUrl, config.apiKey) : new LibreTranslate(config.endpoint, config.apiKey);
}
