import { readFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { isLanguage } from './services/languages.ts';
// Every setting is an environment variable; docs/configuration.md lists them with their defaults (a test checks).
// A bad value throws ConfigError naming the setting, and start-up prints that one line.

export class ConfigError extends Error {
  readonly setting: string;
  constructor(setting: string, why: string) {
    super(`${setting}: ${why}`);
    this.setting = setting;
  }
}

export type TranslationConfig =
  | { backend: 'deepl'; apiKey: string; apiUrl: string }
  | { backend: 'libretranslate'; endpoint: string; apiKey: string };

/** The OpenID Connect provider people sign in with (OIDC_* settings; README lists them). */
export interface OidcConfig {
  /** The button's name: "Sign in with <displayName>". */
  displayName: string;
  issuer: string;
  /** Read the provider's endpoints from its /.well-known/openid-configuration; false: the OIDC_*_ENDPOINT settings. */
  discovery: boolean;
  endpoints: { authorization: string; token: string; userinfo: string; jwks: string } | null;
  clientId: string;
  clientSecret: string;
  scope: string[];
  /** The claim whose value is a person's id at the provider (Mastodon's uid), `sub` unless set. */
  uidField: string;
  usePkce: boolean;
  /** Take the provider's e-mail address as confirmed even without `email_verified: true`. */
  assumeEmailIsVerified: boolean;
  /** Ours (GoToSocial's oidc-link-existing): a first sign-in links to the account with the same confirmed address. */
  linkExisting: boolean;
  /** Ours: a first sign-in of someone unknown here creates their account; false: only linked people get in. */
  createAccounts: boolean;
  /** Where the provider sends people back: PUBLIC_URL/auth/auth/openid_connect/callback unless set. */
  redirectUri: string;
}

export type RegistrationsMode = 'open' | 'approved' | 'none';
export type Role = 'web' | 'worker' | 'streaming' | 'all';

export interface Config {
  port: number;
  bind: string;
  localDomain: string;
  /** scheme + LOCAL_DOMAIN, e.g. http://localhost:3000 */
  publicUrl: string;
  databaseUrl: string;
  /**
   * PostgreSQL itself, not a pooler in front of it: database creation and migrations (node-pg-migrate holds a
   * session-level advisory lock, which a transaction pooler cannot keep). DATABASE_URL when not set.
   */
  databaseDirectUrl: string;
  /**
   * false behind a transaction pooler (PgBouncer's pool_mode=transaction, Mastodon's PREPARED_STATEMENTS=false): no
   * named prepared statements, since the next query may run on another server connection that never saw them.
   */
  preparedStatements: boolean;
  /** Streaming replicas for reads that may be slightly behind (storage/replica.ts); empty: every read on the primary. */
  databaseReplicaUrls: string[];
  /** A replica further behind the primary than this (ms) is not read from. */
  databaseReplicaMaxLagMs: number;
  redisUrl: string;
  /**
   * Seed nodes of a Redis Cluster (`REDIS_CLUSTER_NODES=host:port,host:port`); empty: the single Redis of REDIS_URL.
   * On a cluster, REDIS_URL still gives the password, user and TLS (rediss:) every node is reached with.
   */
  redisClusterNodes: string[];
  /**
   * How long a probe of PostgreSQL or Redis may go unanswered before it counts as away (and, twice for PostgreSQL,
   * once for Redis, as hung: its connections are cut off). Mastodon-sized machines keep the default; a machine too
   * loaded to answer `SELECT 1` in that time would otherwise refuse requests for an outage that is not one.
   */
  dependencyTimeoutMs: number;
  /** A request's bound for a PostgreSQL connection and for each statement (a job's is longer: storage/db.ts). */
  databaseQueryTimeoutMs: number;
  /** argon2id's memory (KiB) and passes for new password hashes; a hash keeps its own, so changing them only affects new ones. */
  passwordHash: { memoryKib: number; timeCost: number };
  /** Live events over sharded pub/sub (SPUBLISH, Redis 7) on a cluster; plain PUBLISH reaches every node. */
  redisShardedPubsub: boolean;
  /** Prefix for every Redis key and BullMQ queue, so installs (and test runs) sharing a Redis never collide. */
  redisPrefix: string;
  dataDir: string;
  /**
   * What this process runs: the web server (API, ActivityPub and streaming), only the streaming sockets (as
   * Mastodon's separate streaming server), the job workers, or web and workers together (one machine).
   */
  role: Role;
  logLevel: string;
  registrationsMode: RegistrationsMode;
  instanceTitle: string;
  instanceDescription: string;
  contactEmail: string;
  contactUsername: string;
  /** Where this server's source code is published (the v2 instance entity's source_url). */
  sourceUrl: string;
  /** HTML for the about page (/api/v1/instance/extended_description), sanitised when shown; '' uses the description. */
  instanceExtendedDescription: string;
  /** An image file shown as the instance's thumbnail (processed at start); '' uses a plain generated banner. */
  instanceThumbnail: string;
  /** The thumbnail's alt text; '' for none. */
  instanceThumbnailDescription: string;
  /** ISO 639 codes of the instance's main languages, in order. */
  instanceLanguages: string[];
  /** HTML shown to people who want to sign up while registrations are closed; '' for none. */
  registrationsClosedMessage: string;
  /** A status page for the server (the v2 instance entity's configuration.urls.status); '' for none. */
  statusPageUrl: string;
  maxStatusChars: number;
  maxImageBytes: number;
  /** Largest accepted video or audio upload. */
  maxVideoBytes: number;
  /**
   * The machine's programs for video, audio, animated images (ffmpeg, ffprobe) and HEIC photos (heif-convert):
   * a name looked up on the PATH, or a path. Missing ones are said once at start, and such uploads refused.
   */
  ffmpegPath: string;
  ffprobePath: string;
  heifConvertPath: string;
  /** PostgreSQL's pg_dump and pg_restore, for `npm run cli -- backup` and `restore` (a name on the PATH, or a path). */
  pgDumpPath: string;
  pgRestorePath: string;
  /** Transcodes (ffmpeg, heif-convert) one worker process runs at once; each waits its turn on the media queue. */
  mediaTranscodeConcurrency: number;
  /** The longest one run of ffmpeg may take before it is killed and the upload fails. */
  mediaTranscodeTimeoutMs: number;
  /** The address space one run of ffmpeg may take (prlimit --as), in bytes. */
  mediaTranscodeMemoryBytes: number;
  actorIdleMs: number;
  /** With the job worker in this process: the longest a new post waits while the worker is behind (0: never). */
  postHoldMs: number;
  /** PostgreSQL connections this process may hold: requests and the jobs running at once (16 per worker) share them. */
  databasePoolSize: number;
  /**
   * With ROLE=streaming, how many processes hold the sockets, sharing the port (node:cluster, as Mastodon's
   * STREAMING_CLUSTER_NUM): writing to sockets is kernel work that a second process does on a second core.
   */
  streamingProcesses: number;
  trustProxy: boolean;
  rateLimits: boolean;
  /** API requests allowed per token (or address) in 5 minutes: Mastodon's 300 unless set (RATE_LIMIT_API_PER_5MIN). */
  rateLimitApiPer5Min: number;
  /**
   * Whether remote fetches (actors, notes, WebFinger) may reach loopback and private addresses. Off in production:
   * input from other servers must not make us probe our own network. Tests and local trials turn it on.
   */
  allowPrivateAddresses: boolean;
  /** Copies of other servers' media older than this many days are removed (and copied again when viewed); 0 keeps them. */
  mediaCacheRetentionDays: number;
  /** Other servers' posts nobody here interacted with are removed after this many days (0: kept). */
  contentCacheRetentionDays: number;
  /** Machine translation of posts (Mastodon's DeepL or LibreTranslate settings); null: off, as Mastodon by default. */
  translation: TranslationConfig | null;
  /**
   * Mastodon's AUTHORIZED_FETCH ("secure mode"): actors, their collections and posts are served only to GETs signed
   * by another server's actor (the instance actor stays open: others need its key to check our signatures).
   */
  authorizedFetch: boolean;
  /**
   * Mastodon's LIMITED_FEDERATION_MODE: only servers on the allow list (domains allows: admin API, CLI) may federate.
   */
  limitedFederationMode: boolean;
  /** Who may read GET /api/v1/instance/domain_blocks (Mastodon's show_domain_blocks), and see its comments. */
  showDomainBlocks: 'all' | 'users' | 'disabled';
  showDomainBlocksRationale: 'all' | 'users' | 'disabled';
  /** TLS certificate and key (PEM files) to serve https directly; without them, run behind a TLS-terminating proxy. */
  tlsCertFile: string;
  tlsKeyFile: string;
  softwareVersion: string;
  /** Where uploaded files live: `local` (DATA_DIR/files, served by this server) or `s3` (an S3-compatible bucket). */
  fileHost: 'local' | 's3';
  s3: { bucket: string; region: string; endpoint: string; accessKeyId: string; secretAccessKey: string; publicUrl: string; forcePathStyle: boolean };
  /** The first wait before a failed delivery to another server is tried again; it doubles each time, up to 6 h. */
  deliveryRetryBaseMs: number;
  /** Activities one relay may bring in a minute; past that they are refused with 429 and logged (federation/relays.ts). */
  relayIntakePerMinute: number;
  /** How many activities one group may relay to us a minute (FEP-1b12 Announces); more are dropped. */
  relayedPerMinute: number;
  /** Who push services may contact about our Web Push (the VAPID `sub` claim): a mailto: or https: URL. */
  vapidSubject: string;
  /** A bearer token Prometheus sends to GET /metrics ('' for none: then only an administrator's token with admin:read). */
  metricsToken: string;
  /** How far ahead a post must be scheduled (Mastodon: 5 minutes); lowered only by tests that wait for one. */
  scheduledStatusMinDelaySeconds: number;
  /**
   * Fetching a remote thread's missing posts when someone opens it (Mastodon's Status::FetchRepliesConcern and
   * ActivityPub::FetchAllRepliesWorker, with their settings' names and defaults): whether at all, how many posts and
   * collection pages one fetch may take in all, how many replies of one post, how long before a post's replies are
   * fetched again, and how old a post must be before its replies are fetched at all.
   */
  fetchReplies: { enabled: boolean; maxGlobal: number; maxSingle: number; maxPages: number; cooldownMinutes: number; initialWaitMinutes: number };
  /**
   * Outgoing mail (confirmations, password resets, moderation): an SMTP server, or null when mail is off; then new
   * addresses count as confirmed at once, so that a trial instance works without one.
   */
  smtp: SmtpSettings | null;
  /**
   * The key that encrypts two-factor secrets at rest (OTP_SECRET, 32 characters or more; every process must share
   * it); '' to use a key file made in DATA_DIR on first use (one machine).
   */
  otpSecret: string;
  /** Single sign-on through one OpenID Connect provider (Mastodon's OIDC_* settings); null: off. */
  oidc: OidcConfig | null;
  /** Mastodon's OMNIAUTH_ONLY: sign-in and sign-up with a password are off, only the provider signs people in. */
  omniauthOnly: boolean;
  /** Operators' texts for /privacy-policy and /terms-of-service (HTML, sanitised when shown); '' for the defaults. */
  privacyPolicy: string;
  termsOfService: string;
}

export interface SmtpSettings {
  /** smtp:// or smtps:// URL with credentials (SMTP_URL), or built from SMTP_SERVER, SMTP_PORT, SMTP_LOGIN, SMTP_PASSWORD. */
  url: string;
  /** The From address of every mail (SMTP_FROM_ADDRESS; default notifications@ the local domain's host). */
  from: string;
}

function smtpSettings(env: Env, localDomain: string): SmtpSettings | null {
  const host = localDomain.replace(/:\d+$/, '');
  const from = str(env, 'SMTP_FROM_ADDRESS', `notifications@${host}`);
  if (env.SMTP_URL) return { url: url(env, 'SMTP_URL', '', ['smtp:', 'smtps:']), from };
  const server = str(env, 'SMTP_SERVER', '');
  if (server === '') return null;
  const port = int(env, 'SMTP_PORT', 587, 1, 65535);
  const login = str(env, 'SMTP_LOGIN', '');
  const auth = login ? `${encodeURIComponent(login)}:${encodeURIComponent(str(env, 'SMTP_PASSWORD', ''))}@` : '';
  return { url: `${port === 465 ? 'smtps' : 'smtp'}://${auth}${server}:${port}`, from };
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string, fallback: string): string {
  const v = env[name];
  return v === undefined || v === '' ? fallback : v;
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `expected a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(name, `expected true or false, got "${raw}"`);
}

function languages(env: Env, name: string, fallback: string): string[] {
  const codes = str(env, name, fallback).split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '');
  const unknown = codes.find((c) => !isLanguage(c));
  if (unknown !== undefined) throw new ConfigError(name, `not an ISO 639 language code: "${unknown}"`);
  if (codes.length === 0) throw new ConfigError(name, 'name at least one language, e.g. en');
  return [...new Set(codes)];
}

function file(env: Env, name: string): string {
  const path = str(env, name, '');
  if (path === '') return '';
  try {
    if (statSync(path).isFile()) return path;
  } catch {
    // reported below
  }
  throw new ConfigError(name, `no such file: "${path}"`);
}

function otpSecret(env: Env): string {
  const value = str(env, 'OTP_SECRET', '');
  if (value !== '' && value.length < 32) throw new ConfigError('OTP_SECRET', 'must be at least 32 characters (e.g. openssl rand -hex 32)');
  return value;
}

/** The text of a file named by a setting ('' when unset), read at start: a file that cannot be read stops start-up. */
function textFile(env: Env, name: string): string {
  const path = file(env, name);
  return path === '' ? '' : readFileSync(path, 'utf8');
}

function oneOf<T extends string>(env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const raw = str(env, name, fallback);
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `expected one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

function url(env: Env, name: string, fallback: string, protocols: string[]): string {
  const raw = str(env, name, fallback);
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `not a valid URL: "${raw}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `expected a ${protocols.join(' or ')} URL, got "${parsed.protocol}"`);
  }
  return raw;
}

/** A guessable token would publish the server's figures: at least 16 characters. */
function metricsToken(env: Env): string {
  const token = str(env, 'METRICS_TOKEN', '');
  if (token !== '' && (token.length < 16 || /\s/.test(token))) throw new ConfigError('METRICS_TOKEN', 'use at least 16 characters, without spaces');
  return token;
}

const SOFTWARE_VERSION = (JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** DATABASE_REPLICA_URL: comma-separated PostgreSQL URLs of streaming replicas of DATABASE_URL's database. */
/** `host:port,host:port`: a cluster's seed nodes, any few of them (the client learns the rest). */
function clusterNodes(env: Env, name: string): string[] {
  const nodes = str(env, name, '').split(',').map((n) => n.trim()).filter((n) => n !== '');
  for (const node of nodes) {
    const m = /^(\[[0-9a-fA-F:]+\]|[^:\s\[\]]+):(\d+)$/.exec(node);
    if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) throw new ConfigError(name, `expected host:port, got "${node}"`);
  }
  return nodes;
}

function replicaUrls(env: Env, databaseUrl: string): string[] {
  const urls = str(env, 'DATABASE_REPLICA_URL', '').split(',').map((u) => u.trim()).filter((u) => u !== '');
  for (const u of urls) {
    let parsed: URL;
    try {
      parsed = new URL(u);
    } catch {
      throw new ConfigError('DATABASE_REPLICA_URL', `"${u}" is not a URL`);
    }
    if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') throw new ConfigError('DATABASE_REPLICA_URL', `expected postgres:// URLs, got "${parsed.protocol}"`);
    if (parsed.pathname === '/' || parsed.pathname === '') parsed.pathname = new URL(databaseUrl).pathname;
    urls[urls.indexOf(u)] = parsed.toString();
  }
  return urls;
}

/**
 * An issuer over plain http only on loopback (a provider on the same machine, or a test's): anywhere else its tokens
 * and keys would cross the network in the clear.
 */
function oidcUrl(env: Env, name: string, fallback = ''): string {
  const raw = url(env, name, fallback, ['https:', 'http:']);
  const { protocol, hostname } = new URL(raw);
  if (protocol === 'http:' && !['localhost', '127.0.0.1', '[::1]'].includes(hostname)) throw new ConfigError(name, 'must be an https URL (http only on loopback)');
  return raw;
}

function oidcConfig(env: Env, publicUrl: string): OidcConfig | null {
  if (!bool(env, 'OIDC_ENABLED', false)) return null;
  for (const name of ['OIDC_ISSUER', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET']) {
    if (!env[name]) throw new ConfigError(name, 'is required when OIDC_ENABLED=true');
  }
  const discovery = bool(env, 'OIDC_DISCOVERY', true);
  const scope = str(env, 'OIDC_SCOPE', 'openid,profile,email').split(/[\s,]+/).filter((s) => s !== '');
  if (!scope.includes('openid')) throw new ConfigError('OIDC_SCOPE', 'must include openid');
  return {
    displayName: str(env, 'OIDC_DISPLAY_NAME', 'OpenID Connect'),
    issuer: oidcUrl(env, 'OIDC_ISSUER'),
    discovery,
    endpoints: discovery ? null : {
      authorization: oidcUrl(env, 'OIDC_AUTH_ENDPOINT'),
      token: oidcUrl(env, 'OIDC_TOKEN_ENDPOINT'),
      userinfo: oidcUrl(env, 'OIDC_USER_INFO_ENDPOINT'),
      jwks: oidcUrl(env, 'OIDC_JWKS_URI'),
    },
    clientId: str(env, 'OIDC_CLIENT_ID', ''),
    clientSecret: str(env, 'OIDC_CLIENT_SECRET', ''),
    scope,
    uidField: str(env, 'OIDC_UID_FIELD', 'sub'),
    usePkce: bool(env, 'OIDC_USE_PKCE', true),
    assumeEmailIsVerified: bool(env, 'OIDC_SECURITY_ASSUME_EMAIL_IS_VERIFIED', false),
    linkExisting: bool(env, 'OIDC_LINK_EXISTING', false),
    createAccounts: bool(env, 'OIDC_CREATE_ACCOUNTS', true),
    redirectUri: url(env, 'OIDC_REDIRECT_URI', `${publicUrl}/auth/auth/openid_connect/callback`, ['https:', 'http:']),
  };
}

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/fedi_server';

/** DeepL when DEEPL_API_KEY is set, else LibreTranslate when LIBRE_TRANSLATE_ENDPOINT is (Mastodon's order). */
function translationConfig(env: Env): TranslationConfig | null {
  const deeplKey = str(env, 'DEEPL_API_KEY', '');
  if (deeplKey !== '') {
    const plan = oneOf(env, 'DEEPL_PLAN', 'free', ['free', 'pro'] as const);
    const fallback = plan === 'free' ? 'https://api-free.deepl.com' : 'https://api.deepl.com';
    const apiUrl = env.DEEPL_API_URL ? url(env, 'DEEPL_API_URL', '', ['http:', 'https:']) : fallback;
    return { backend: 'deepl', apiKey: deeplKey, apiUrl: apiUrl.replace(/\/+$/, '') };
  }
  if (env.LIBRE_TRANSLATE_ENDPOINT) {
    const endpoint = url(env, 'LIBRE_TRANSLATE_ENDPOINT', '', ['http:', 'https:']).replace(/\/+$/, '');
    return { backend: 'libretranslate', endpoint, apiKey: str(env, 'LIBRE_TRANSLATE_API_KEY', '') };
  }
  return null;
}

/** The setting `databaseDirectUrl` came from: DATABASE_DIRECT_URL when it is set apart, else DATABASE_URL. */
export function databaseDirectSetting(config: Pick<Config, 'databaseUrl' | 'databaseDirectUrl'>): 'DATABASE_URL' | 'DATABASE_DIRECT_URL' {
  return config.databaseDirectUrl === config.databaseUrl ? 'DATABASE_URL' : 'DATABASE_DIRECT_URL';
}

export function loadConfig(env: Env = process.env): Config {
  const localDomain = str(env, 'LOCAL_DOMAIN', 'localhost:3000');
  if (!/^[a-z0-9.-]+(:\d+)?$/i.test(localDomain)) {
    throw new ConfigError('LOCAL_DOMAIN', `expected a host name with an optional port, got "${localDomain}"`);
  }
  const tlsCertFile = str(env, 'TLS_CERT_FILE', '');
  const tlsKeyFile = str(env, 'TLS_KEY_FILE', '');
  if ((tlsCertFile === '') !== (tlsKeyFile === '')) {
    throw new ConfigError(tlsCertFile ? 'TLS_KEY_FILE' : 'TLS_CERT_FILE', 'TLS_CERT_FILE and TLS_KEY_FILE go together');
  }
  // Serving TLS itself, the server is an https origin; behind a proxy, LOCAL_HTTPS says so.
  const https = tlsCertFile !== '' || bool(env, 'LOCAL_HTTPS', false);
  const databaseUrl = url(env, 'DATABASE_URL', DEFAULT_DATABASE_URL, ['postgres:', 'postgresql:']);
  if (new URL(databaseUrl).pathname.replace(/^\//, '') === '') {
    throw new ConfigError('DATABASE_URL', 'must name a database, e.g. postgres://postgres@127.0.0.1:5432/fedi_server');
  }
  const databaseDirectUrl = env.DATABASE_DIRECT_URL ? url(env, 'DATABASE_DIRECT_URL', '', ['postgres:', 'postgresql:']) : databaseUrl;
  const preparedStatements = bool(env, 'PREPARED_STATEMENTS', true);
  // Migrations through a transaction pooler would take their lock on one server connection and could release it
  // on another (or never): behind one, they go straight to PostgreSQL.
  if (!preparedStatements && !env.DATABASE_DIRECT_URL) {
    throw new ConfigError('DATABASE_DIRECT_URL', 'is required with PREPARED_STATEMENTS=false: PostgreSQL itself (not the pooler), for migrations');
  }
  const contactEmail = str(env, 'INSTANCE_CONTACT_EMAIL', '');
  const redisClusterNodes = clusterNodes(env, 'REDIS_CLUSTER_NODES');
  const redisPrefix = str(env, 'REDIS_PREFIX', 'fedi:');
  // A key's first {…} is its hash tag on a cluster: a braced prefix would put every key in one slot.
  if (redisClusterNodes.length > 0 && /[{}]/.test(redisPrefix)) throw new ConfigError('REDIS_PREFIX', 'may not contain { or } on a Redis Cluster');
  const oidc = oidcConfig(env, `${https ? 'https' : 'http'}://${localDomain}`);
  const omniauthOnly = bool(env, 'OMNIAUTH_ONLY', false);
  if (omniauthOnly && !oidc) throw new ConfigError('OMNIAUTH_ONLY', 'needs OIDC_ENABLED=true: nobody could sign in');
  const fileHost = oneOf(env, 'FILE_HOST', 'local', ['local', 's3'] as const);
  if (fileHost === 's3') {
    for (const name of ['S3_BUCKET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'S3_PUBLIC_URL']) {
      if (!env[name]) throw new ConfigError(name, 'is required when FILE_HOST=s3');
    }
  }
  return {
    port: int(env, 'PORT', 3000, 0, 65535),
    bind: str(env, 'BIND', '127.0.0.1'),
    localDomain,
    publicUrl: `${https ? 'https' : 'http'}://${localDomain}`,
    databaseUrl,
    databaseDirectUrl,
    preparedStatements,
    databaseReplicaUrls: replicaUrls(env, databaseUrl),
    databaseReplicaMaxLagMs: int(env, 'DATABASE_REPLICA_MAX_LAG_MS', 10_000, 100, 3_600_000),
    redisUrl: url(env, 'REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']),
    redisPrefix,
    redisClusterNodes,
    redisShardedPubsub: bool(env, 'REDIS_SHARDED_PUBSUB', redisClusterNodes.length > 0),
    dependencyTimeoutMs: int(env, 'DEPENDENCY_TIMEOUT_MS', 1500, 100, 60_000),
    databaseQueryTimeoutMs: int(env, 'DATABASE_QUERY_TIMEOUT_MS', 2000, 100, 600_000),
    passwordHash: { memoryKib: int(env, 'PASSWORD_HASH_MEMORY_KIB', 65_536, 1024, 4_194_304), timeCost: int(env, 'PASSWORD_HASH_TIME_COST', 3, 1, 100) },
    dataDir: str(env, 'DATA_DIR', './data'),
    role: oneOf(env, 'ROLE', 'all', ['web', 'worker', 'streaming', 'all'] as const),
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
    registrationsMode: oneOf(env, 'REGISTRATIONS_MODE', 'open', ['open', 'approved', 'none'] as const),
    instanceTitle: str(env, 'INSTANCE_TITLE', localDomain),
    instanceDescription: str(env, 'INSTANCE_DESCRIPTION', 'A Mastodon-compatible, federated microblogging server.'),
    contactEmail,
    contactUsername: str(env, 'INSTANCE_CONTACT_USERNAME', '').replace(/^@/, ''),
    sourceUrl: str(env, 'SOURCE_URL', ''),
    instanceExtendedDescription: str(env, 'INSTANCE_EXTENDED_DESCRIPTION', ''),
    instanceThumbnail: file(env, 'INSTANCE_THUMBNAIL'),
    instanceThumbnailDescription: str(env, 'INSTANCE_THUMBNAIL_DESCRIPTION', ''),
    instanceLanguages: languages(env, 'INSTANCE_LANGUAGES', 'en'),
    registrationsClosedMessage: str(env, 'REGISTRATIONS_CLOSED_MESSAGE', ''),
    statusPageUrl: env.STATUS_PAGE_URL ? url(env, 'STATUS_PAGE_URL', '', ['http:', 'https:']) : '',
    maxStatusChars: int(env, 'MAX_STATUS_CHARS', 500, 1, 100_000),
    maxImageBytes: int(env, 'MAX_IMAGE_BYTES', 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxVideoBytes: int(env, 'MAX_VIDEO_BYTES', 99 * 1024 * 1024, 1024, 4 * 1024 * 1024 * 1024),
    ffmpegPath: str(env, 'FFMPEG_PATH', 'ffmpeg'),
    ffprobePath: str(env, 'FFPROBE_PATH', 'ffprobe'),
    heifConvertPath: str(env, 'HEIF_CONVERT_PATH', 'heif-convert'),
    pgDumpPath: str(env, 'PG_DUMP_PATH', 'pg_dump'),
    pgRestorePath: str(env, 'PG_RESTORE_PATH', 'pg_restore'),
    // Half the cores (one on two), so posting, reading and fan-out keep the rest.
    mediaTranscodeConcurrency: int(env, 'MEDIA_TRANSCODE_CONCURRENCY', Math.max(1, Math.floor(availableParallelism() / 2)), 1, 64),
    mediaTranscodeTimeoutMs: int(env, 'MEDIA_TRANSCODE_TIMEOUT_SECONDS', 900, 1, 86_400) * 1000,
    mediaTranscodeMemoryBytes: int(env, 'MEDIA_TRANSCODE_MEMORY_MB', 3072, 256, 1_048_576) * 1024 * 1024,
    actorIdleMs: int(env, 'ACTOR_IDLE_MS', 10 * 60 * 1000, 100, 24 * 3600 * 1000),
    postHoldMs: int(env, 'POST_HOLD_MS', 2000, 0, 60_000),
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 20, 2, 500),
    streamingProcesses: int(env, 'STREAMING_PROCESSES', 1, 1, 64),
    trustProxy: bool(env, 'TRUST_PROXY', false),
    rateLimits: bool(env, 'RATE_LIMITS', true),
    rateLimitApiPer5Min: int(env, 'RATE_LIMIT_API_PER_5MIN', 300, 1, 1_000_000_000),
    allowPrivateAddresses: bool(env, 'ALLOW_PRIVATE_ADDRESSES', false),
    mediaCacheRetentionDays: int(env, 'MEDIA_CACHE_RETENTION_DAYS', 0, 0, 36_500),
    contentCacheRetentionDays: int(env, 'CONTENT_CACHE_RETENTION_DAYS', 0, 0, 36_500),
    translation: translationConfig(env),
    authorizedFetch: bool(env, 'AUTHORIZED_FETCH', false),
    limitedFederationMode: bool(env, 'LIMITED_FEDERATION_MODE', false),
    showDomainBlocks: oneOf(env, 'SHOW_DOMAIN_BLOCKS', 'all', ['all', 'users', 'disabled'] as const),
    showDomainBlocksRationale: oneOf(env, 'SHOW_DOMAIN_BLOCKS_RATIONALE', 'all', ['all', 'users', 'disabled'] as const),
    tlsCertFile,
    tlsKeyFile,
    softwareVersion: SOFTWARE_VERSION,
    deliveryRetryBaseMs: int(env, 'DELIVERY_RETRY_BASE_MS', 30_000, 10, 3_600_000),
    relayIntakePerMinute: int(env, 'RELAY_INTAKE_PER_MINUTE', 6000, 1, 10_000_000),
    relayedPerMinute: int(env, 'GROUP_RELAYED_PER_MINUTE', 600, 1, 1_000_000),
    scheduledStatusMinDelaySeconds: int(env, 'SCHEDULED_STATUS_MIN_DELAY_SECONDS', 300, 0, 86_400),
    fetchReplies: {
      enabled: bool(env, 'FETCH_REPLIES_ENABLED', true),
      maxGlobal: int(env, 'FETCH_REPLIES_MAX_GLOBAL', 1000, 1, 100_000),
      maxSingle: int(env, 'FETCH_REPLIES_MAX_SINGLE', 500, 1, 100_000),
      maxPages: int(env, 'FETCH_REPLIES_MAX_PAGES', 500, 1, 100_000),
      cooldownMinutes: int(env, 'FETCH_REPLIES_COOLDOWN_MINUTES', 15, 0, 525_600),
      initialWaitMinutes: int(env, 'FETCH_REPLIES_INITIAL_WAIT_MINUTES', 5, 0, 525_600),
    },
    metricsToken: metricsToken(env),
    smtp: smtpSettings(env, localDomain),
    otpSecret: otpSecret(env),
    oidc,
    omniauthOnly,
    privacyPolicy: textFile(env, 'PRIVACY_POLICY_FILE'),
    termsOfService: textFile(env, 'TERMS_OF_SERVICE_FILE'),
    // Mastodon signs with its contact email; without one, our https URL; on plain http (local trials), a placeholder.
    vapidSubject: url(env, 'VAPID_SUBJECT', contactEmail ? `mailto:${contactEmail}` : https ? `https://${localDomain}` : 'mailto:contact-not-set@example.invalid', ['mailto:', 'https:']),
    fileHost,
    s3: {
      bucket: str(env, 'S3_BUCKET', ''),
      region: str(env, 'S3_REGION', 'us-east-1'),
      endpoint: fileHost === 's3' && env.S3_ENDPOINT ? url(env, 'S3_ENDPOINT', '', ['http:', 'https:']) : '',
      accessKeyId: str(env, 'S3_ACCESS_KEY_ID', ''),
      secretAccessKey: str(env, 'S3_SECRET_ACCESS_KEY', ''),
      publicUrl: str(env, 'S3_PUBLIC_URL', '').replace(/\/+$/, ''),
      forcePathStyle: bool(env, 'S3_FORCE_PATH_STYLE', true),
    },
  };
}
