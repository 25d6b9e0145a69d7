import type { Config, RegistrationsMode } from '../config.ts';
import type { Db } from '../storage/db.ts';
import { transaction } from '../storage/db.ts';
import { onSubscriptionLapse, type RedisClient } from '../storage/redis.ts';
import { readServerSettings, seedServerSettings, writeServerSettings } from '../storage/server-settings.ts';
import { findAccountByUsername } from '../storage/accounts.ts';
import { isLanguage } from './languages.ts';
import { logAction, type Actor } from './action-log.ts';

/**
 * The settings an operator changes while the server runs (Mastodon's AdminSettings): kept in PostgreSQL, shown
 * and changed on /admin/settings. They are fields of the process's Config: a process writes the stored values onto
 * its own `config` object when it starts and whenever another process says they changed (Redis pub/sub), so every
 * reader of `ctx.config.instanceTitle`, `maxStatusChars`… (the instance entities, posting, uploads, sign-up, pages)
 * reads the run-time value without a query. The environment gives each one's first value: a setting with no row yet
 * is written from it at start.
 *
 * Everything else in config.ts stays in the environment and needs a restart (addresses, storage, mail, keys).
 */
export type RunTimeSettings = Pick<Config,
  | 'instanceTitle' | 'instanceDescription' | 'instanceExtendedDescription' | 'contactEmail' | 'contactUsername'
  | 'registrationsMode' | 'registrationsClosedMessage' | 'instanceLanguages' | 'termsOfService' | 'privacyPolicy'
  | 'maxStatusChars' | 'maxImageBytes' | 'maxVideoBytes' | 'contentCacheRetentionDays'>;
export type SettingField = keyof RunTimeSettings;

/** Each setting's stored name (Mastodon's Setting names where it has one). */
export const SETTING_NAMES: Readonly<Record<SettingField, string>> = {
  instanceTitle: 'site_title',
  instanceDescription: 'site_short_description',
  instanceExtendedDescription: 'site_extended_description',
  contactEmail: 'site_contact_email',
  contactUsername: 'site_contact_username',
  registrationsMode: 'registrations_mode',
  registrationsClosedMessage: 'closed_registrations_message',
  instanceLanguages: 'languages',
  termsOfService: 'site_terms',
  privacyPolicy: 'privacy_policy',
  maxStatusChars: 'status_max_characters',
  maxImageBytes: 'media_image_max_bytes',
  maxVideoBytes: 'media_video_max_bytes',
  contentCacheRetentionDays: 'content_cache_retention_period',
};
const FIELDS = Object.keys(SETTING_NAMES) as SettingField[];

export const REGISTRATIONS_MODES: readonly RegistrationsMode[] = ['open', 'approved', 'none'];
export const TITLE_MAX = 200;
export const SHORT_DESCRIPTION_MAX = 1000;
/** The HTML texts (about page, terms, privacy policy) and the closed sign-ups message. */
export const TEXT_MAX = 100_000;
export const STATUS_CHARS_MAX = 100_000;
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/;
const USERNAME = /^[a-z0-9_]{1,30}$/i;

/** A change refused, with a reason for each field that was wrong. */
export class SettingsRefused extends Error {
  readonly fields: Partial<Record<SettingField, string>>;
  constructor(fields: Partial<Record<SettingField, string>>) {
    super(Object.values(fields).join(' '));
    this.fields = fields;
  }
}

/**
 * The reason a value cannot be this setting's, or null. Uploads are read into memory up to a size fixed when the
 * process starts, so the media limits may not go above the environment's (MAX_IMAGE_BYTES, MAX_VIDEO_BYTES).
 */
function problem(field: SettingField, value: unknown, ceilings: Pick<RunTimeSettings, 'maxImageBytes' | 'maxVideoBytes'>): string | null {
  const text = (max: number, what: string) => (typeof value !== 'string' ? `${what} must be text.` : value.length > max ? `${what} may be at most ${max} characters.` : null);
  const whole = (min: number, max: number, what: string) =>
    (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max ? `${what} must be a whole number from ${min} to ${max}.` : null);
  switch (field) {
    case 'instanceTitle':
      return text(TITLE_MAX, 'The title') ?? ((value as string).trim() === '' ? 'The title may not be empty.' : null);
    case 'instanceDescription':
      return text(SHORT_DESCRIPTION_MAX, 'The short description');
    case 'instanceExtendedDescription':
    case 'termsOfService':
    case 'privacyPolicy':
    case 'registrationsClosedMessage':
      return text(TEXT_MAX, 'The text');
    case 'contactEmail':
      return text(320, 'The contact address') ?? (value !== '' && !EMAIL.test(value as string) ? 'The contact address is not an e-mail address.' : null);
    case 'contactUsername':
      return text(30, 'The contact account') ?? (value !== '' && !USERNAME.test(value as string) ? 'The contact account must be a username of this server.' : null);
    case 'registrationsMode':
      return REGISTRATIONS_MODES.includes(value as RegistrationsMode) ? null : 'Sign-ups must be open, need approval, or be closed.';
    case 'instanceLanguages':
      if (!Array.isArray(value) || value.length === 0 || value.length > 20) return 'Name from one to twenty languages.';
      return value.every((c) => typeof c === 'string' && isLanguage(c)) ? null : `Not an ISO 639 language code: ${value.find((c) => typeof c !== 'string' || !isLanguage(c))}.`;
    case 'maxStatusChars':
      return whole(1, STATUS_CHARS_MAX, 'The character limit');
    case 'maxImageBytes':
      return whole(1024, ceilings.maxImageBytes, 'The image size limit');
    case 'maxVideoBytes':
      return whole(1024, ceilings.maxVideoBytes, 'The video size limit');
    case 'contentCacheRetentionDays':
      return whole(0, 36_500, 'The content cache retention period');
  }
}

const pick = (config: RunTimeSettings): RunTimeSettings =>
  Object.fromEntries(FIELDS.map((f) => [f, Array.isArray(config[f]) ? [...config[f]] : config[f]])) as unknown as RunTimeSettings;

export const settingsChannel = (redisPrefix: string) => `${redisPrefix}settings:changed`;

/** Tells every process to read the settings again (after they were written; the CLI can call it too). */
export async function publishSettingsChange(redis: RedisClient, redisPrefix: string): Promise<void> {
  await redis.publish(settingsChannel(redisPrefix), '1');
}

export class ServerSettings {
  /** The environment's values, as this process started with them: the first values, and the media ceilings. */
  readonly environment: Readonly<RunTimeSettings>;
  private readonly db: Db;
  private readonly redis: RedisClient;
  private readonly config: Config;
  private readonly listeners: (() => void)[] = [];
  /** Bumped by each reload: an older one that finishes late does not overwrite a newer one. */
  private loads = 0;
  private retry: NodeJS.Timeout | null = null;

  constructor(db: Db, redis: RedisClient, config: Config) {
    this.db = db;
    this.redis = redis;
    this.config = config;
    this.environment = Object.freeze(pick(config));
  }

  /** The values in force in this process. */
  get current(): RunTimeSettings {
    return pick(this.config);
  }

  /** Writes the environment's values of settings not stored yet, reads them all, and listens for changes. */
  async start(subscriber: RedisClient): Promise<void> {
    const seed = Object.fromEntries(FIELDS.filter((f) => !problem(f, this.environment[f], this.environment)).map((f) => [SETTING_NAMES[f], this.environment[f]]));
    await seedServerSettings(this.db, seed);
    await this.reload();
    subscriber.on('message', (channel: string) => {
      if (channel === settingsChannel(this.config.redisPrefix)) void this.reload();
    });
    // A change published while the subscription was down would be missed: read them again when it is back.
    onSubscriptionLapse(subscriber, () => void this.reload());
    await subscriber.subscribe(settingsChannel(this.config.redisPrefix));
  }

  /** Runs after every change reaches this process (caches of what the settings show). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /**
   * Validates and stores a change, applies it here and tells the other processes. A contact account must be a
   * local account. Throws SettingsRefused, with nothing stored, when any value is wrong. The operators' audit log has
   * it as 'update' of AdminSettings (Mastodon's Form::AdminSettings; the log's kinds are single words), named by the
   * settings whose value changed (`by`: the operator's account), in the same transaction.
   */
  async change(values: Partial<RunTimeSettings>, by?: Actor): Promise<void> {
    const fields: Partial<Record<SettingField, string>> = {};
    for (const f of FIELDS) {
      if (!(f in values)) continue;
      const why = problem(f, values[f], this.environment);
      if (why) fields[f] = why;
    }
    if (values.contactUsername && !fields.contactUsername && !(await findAccountByUsername(this.db, values.contactUsername, null))) {
      fields.contactUsername = `There is no account named ${values.contactUsername} here.`;
    }
    if (Object.keys(fields).length > 0) throw new SettingsRefused(fields);
    const given = FIELDS.filter((f) => f in values);
    const current = this.current;
    const changed = given.filter((f) => JSON.stringify(values[f]) !== JSON.stringify(current[f])).map((f) => SETTING_NAMES[f]);
    await transaction(this.db, async (tx) => {
      await writeServerSettings(tx, Object.fromEntries(given.map((f) => [SETTING_NAMES[f], values[f]])));
      await logAction(tx, by, 'update', { type: 'AdminSettings', id: null, name: changed.length > 0 ? changed.join(', ') : 'no setting changed' });
    });
    await this.reload();
    await publishSettingsChange(this.redis, this.config.redisPrefix);
  }

  /** Reads the stored settings and applies them; a failed read is tried again each second until one succeeds. */
  async reload(): Promise<void> {
    const load = ++this.loads;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    let stored: Map<string, unknown>;
    try {
      stored = await readServerSettings(this.db);
    } catch (err) {
      if (load === 1) throw err;
      if (load === this.loads) this.retry = setTimeout(() => void this.reload(), 1000).unref();
      return;
    }
    if (load !== this.loads) return;
    this.apply(stored);
  }

  /** Stops retrying a failed read (the process is closing). */
  close(): void {
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    this.loads++;
  }

  private apply(stored: Map<string, unknown>): void {
    const next: Partial<Record<SettingField, unknown>> = {};
    for (const f of FIELDS) {
      const value = stored.get(SETTING_NAMES[f]);
      // A stored value this process cannot take (a media limit above its environment's): the environment's.
      next[f] = value !== undefined && !problem(f, value, this.environment) ? value : this.environment[f];
    }
    Object.assign(this.config, next);
    for (const listener of this.listeners) listener();
  }
}
