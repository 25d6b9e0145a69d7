import type { StatusTranslation } from '../../services/translation/translate-status.ts';

/** Mastodon's Translation entity. */
export function renderTranslation(t: StatusTranslation) {
  return {
    content: t.content,
    spoiler_text: t.spoilerText,
    poll: t.poll ? { id: t.poll.id, options: t.poll.options.map((title) => ({ title })) } : null,
    media_attachments: t.media.map((m) => ({ id: m.id, description: m.description })),
    detected_source_language: t.detectedSourceLanguage,
    language: t.language,
    provider: t.provider,
  };
}
