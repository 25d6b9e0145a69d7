import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { LANGUAGES } from '../../services/languages.ts';
import type { SignedIn } from './session.ts';

/** What the compose form shows: the values (kept after a refused post), the refusal, and the server's count. */
export interface ComposeValues {
  status: string;
  spoiler_text: string;
  visibility: string;
  language: string;
  in_reply_to_id: string;
  /** The description of an image sent with a post that was refused (the file itself must be chosen again). */
  description: string;
  /** A poll's choices (as many boxes as POLL_BOXES; empty ones are no choice), its length in seconds, several answers. */
  poll_options: string[];
  poll_expires_in: string;
  poll_multiple: boolean;
}

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
  pollDurations: [string, string][];
}

/** The instance's languages first, then every other by name. */
let languageList: [string, string][] | undefined;
function languagesFor(config: AppContext['config']): [string, string][] {
  languageList ??= [...LANGUAGES].sort((a, b) => a[1].localeCompare(b[1]));
  const first = config.instanceLanguages.filter((c) => LANGUAGES.has(c)).map((c): [string, string] => [c, LANGUAGES.get(c)!]);
  return [...first, ...languageList.filter(([c]) => !config.instanceLanguages.includes(c))];
}

/** The compose form for the signed-in person: their default visibility and language unless given. */
export function composeView(ctx: AppContext, me: SignedIn, o: Partial<ComposeValues> & { returnTo: string; error?: string; length?: number | null; heading?: string; label?: string }): ComposeView {
  const reply = !!o.in_reply_to_id;
  return {
    values: {
      status: o.status ?? '',
      spoiler_text: o.spoiler_text ?? '',
      visibility: o.visibility ?? me.user.default_privacy ?? 'public',
      language: o.language ?? me.user.default_language ?? ctx.config.instanceLanguages[0] ?? 'en',
      in_reply_to_id: o.in_reply_to_id ?? '',
      description: o.description ?? '',
      poll_options: [...(o.poll_options ?? []), ...Array<string>(POLL_BOXES).fill('')].slice(0, POLL_BOXES),
      poll_expires_in: o.poll_expires_in ?? '86400',
      poll_multiple: o.poll_multiple ?? false,
    },
    error: o.error ?? '',
    length: o.length ?? null,
    maxChars: ctx.config.maxStatusChars,
    // A new key for each form shown: the same form sent twice (a double click, a resend) makes one post.
    idempotencyKey: randomBytes(16).toString('base64url'),
    returnTo: o.returnTo,
    heading: o.heading ?? (reply ? 'Reply' : 'New post'),
    label: o.label ?? (reply ? 'Your reply' : "What's on your mind?"),
    languages: languagesFor(ctx.config),
    pollDurations: POLL_DURATIONS,
  };
}
