import type { AppContext } from '../../context.ts';
import { LANGUAGES } from '../../services/languages.ts';
import type { SignedIn } from './session.ts';
import type { ClientEntry } from './client-view.ts';
import { SLOT } from './page-slots.ts';

/** What the compose form shows: the values (kept after a refused post), the refusal, and the server's count. */
export interface ComposeValues {
  status: string;
  spoiler_text: string;
  visibility: string;
  language: string;
  in_reply_to_id: string;
  /**
   * The four media boxes: each one's description and focus point (-1 to 1, as the API's `focus`), kept when a post
   * is refused. Files already received are kept by id (`media_ids`), so they need not be chosen again.
   */
  media: MediaSlot[];
  media_ids: string[];
  /** When to publish (a `datetime-local` value, read at `scheduled_offset` minutes east of UTC); '' to post now. */
  scheduled_at: string;
  scheduled_offset: string;
  /** The post quoted (Mastodon 4.5's quoted_status_id), '' for none. */
  quoted_status_id: string;
  /** A poll's choices (as many boxes as POLL_BOXES; empty ones are no choice), its length in seconds, several answers. */
  poll_options: string[];
  poll_expires_in: string;
  poll_multiple: boolean;
}

export interface MediaSlot {
  description: string;
  focus_x: string;
  focus_y: string;
}

/** Files one post may carry (Mastodon's four). */
export const MEDIA_BOXES = 4;
/** The offsets from UTC the schedule's time may be read at, in minutes (−12:00 to +14:00, quarter hours where used). */
export const UTC_OFFSETS: [string, string][] = [-720, -660, -600, -570, -540, -480, -420, -360, -300, -240, -210, -180, -120, -60, 0, 60, 120, 180, 210, 240, 270, 300, 330, 345, 360, 390, 420, 480, 525, 540, 570, 600, 630, 660, 720, 765, 780, 840]
  .map((m) => [String(m), `UTC${m < 0 ? '−' : '+'}${String(Math.floor(Math.abs(m) / 60)).padStart(2, '0')}:${String(Math.abs(m) % 60).padStart(2, '0')}`]);

/** Boxes for a poll's choices in the form (Mastodon allows four by default). */
export const POLL_BOXES = 4;
/** How long a poll may run, as the form offers it (seconds, with words). */
export const POLL_DURATIONS: [string, string][] = [['300', '5 minutes'], ['1800', '30 minutes'], ['3600', '1 hour'], ['21600', '6 hours'], ['86400', '1 day'], ['259200', '3 days'], ['604800', '7 days']];

export interface ComposeView {
  values: ComposeValues;
  error: string;
  /** The post's length as the server counts it, shown with a refusal for being too long; null otherwise. */
  length: number | null;
  maxChars: number;
  idempotencyKey: string;
  returnTo: string;
  heading: string;
  label: string;
  languages: [string, string][];
  /** How many of `languages` are the instance's own, shown first (the rest is sorted by name in the page's language). */
  languagesFirst: number;
  pollDurations: [string, string][];
  offsets: [string, string][];
  /** The post being quoted, as the person sees it (null for none). */
  quoted: ClientEntry | null;
  /** Media already received for this post (kept after a refusal): what they are, and whether they are ready. */
  attached: { id: string; type: string; description: string; processing: boolean }[];
  /** Scheduling is offered (not in a reply's form, which stays short). */
  canSchedule: boolean;
}

/** The instance's languages first, then every other by name: made once for the instance's languages, not per form. */
let languageList: [string, string][] | undefined;
const languageChoices = new Map<string, [string, string][]>();
function languagesFor(config: AppContext['config']): [string, string][] {
  const key = config.instanceLanguages.join(',');
  const known = languageChoices.get(key);
  if (known) return known;
  languageList ??= [...LANGUAGES].sort((a, b) => a[1].localeCompare(b[1]));
  const first = config.instanceLanguages.filter((c) => LANGUAGES.has(c)).map((c): [string, string] => [c, LANGUAGES.get(c)!]);
  const list = [...first, ...languageList.filter(([c]) => !config.instanceLanguages.includes(c))];
  if (languageChoices.size < 100) languageChoices.set(key, list);
  return list;
}

/** The compose form for the signed-in person: their default visibility and language unless given. */
export function composeView(ctx: AppContext, me: SignedIn, o: Partial<ComposeValues> & {
  returnTo: string; error?: string; length?: number | null; heading?: string; label?: string; quoted?: ClientEntry | null; attached?: ComposeView['attached'];
}): ComposeView {
  const reply = !!o.in_reply_to_id;
  return {
    values: {
      status: o.status ?? '',
      spoiler_text: o.spoiler_text ?? '',
      visibility: o.visibility ?? me.user.default_privacy ?? 'public',
      language: o.language ?? me.user.default_language ?? ctx.config.instanceLanguages[0] ?? 'en',
      in_reply_to_id: o.in_reply_to_id ?? '',
      media: Array.from({ length: MEDIA_BOXES }, (_, i) => o.media?.[i] ?? { description: '', focus_x: '0', focus_y: '0' }),
      media_ids: o.media_ids ?? [],
      scheduled_at: o.scheduled_at ?? '',
      scheduled_offset: o.scheduled_offset ?? '0',
      quoted_status_id: o.quoted_status_id ?? '',
      poll_options: [...(o.poll_options ?? []), ...Array<string>(POLL_BOXES).fill('')].slice(0, POLL_BOXES),
      poll_expires_in: o.poll_expires_in ?? '86400',
      poll_multiple: o.poll_multiple ?? false,
    },
    error: o.error ?? '',
    length: o.length ?? null,
    maxChars: ctx.config.maxStatusChars,
    // A new key for each form shown, put in by the response (client-page.ts sendSlottedPage).
    idempotencyKey: SLOT.idempotencyKey,
    returnTo: o.returnTo,
    // Empty: the form's own words, in the page's language (the template chooses them).
    heading: o.heading ?? '',
    label: o.label ?? '',
    languages: languagesFor(ctx.config),
    languagesFirst: ctx.config.instanceLanguages.filter((c) => LANGUAGES.has(c)).length,
    pollDurations: POLL_DURATIONS,
    offsets: UTC_OFFSETS,
    quoted: o.quoted ?? null,
    attached: o.attached ?? [],
    canSchedule: !reply,
  };
}
