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
}

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
  };
}
