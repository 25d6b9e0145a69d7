// `emoji …` operator commands: this server's custom emoji (as Mastodon's tootctl emoji does).
import { parseArgs } from 'node:util';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { lstat, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, extname, join } from 'node:path';
import { addLocalEmoji, EMOJI_SIZE_LIMIT, EmojiRefused, removeLocalEmoji, setLocalEmojiEnabled, setRemoteEmojiEnabled, type EmojiDeps } from '../services/custom-emojis.ts';
import { findRemoteEmojiByShortcode, listLocalEmojis } from '../storage/custom-emojis.ts';
import { normalizeDomain } from '../services/domain-policy.ts';
import { copyRemoteEmoji } from '../services/emoji-copy.ts';
import type { Actor } from '../services/action-log.ts';
import type { Config } from '../config.ts';
import type { RedisClient } from '../storage/redis.ts';

/** The emoji commands' needs; `remote` (settings and Redis) for fetching another server's emoji. */
/** `actor`: the audit log's, the --as operator's account or null for the shell's operator. */
export type EmojiCliDeps = EmojiDeps & { remote?: { config: Config; redis: RedisClient }; actor?: Actor };

export const EMOJI_USAGE = `  emoji add <shortcode> <file> [--category <name>] [--unlisted] [--overwrite]
      Adds a custom emoji from a PNG, GIF or WebP image under ${EMOJI_SIZE_LIMIT / 1024} KB (shortcode: 2 or more of a-z, A-Z,
      0-9 and _). --unlisted keeps it out of apps' pickers; --overwrite replaces the image of one with that shortcode.
  emoji import <folder | file.tar | file.tar.gz> [--prefix <text>] [--suffix <text>] [--category <name>] [--unlisted] [--overwrite]
      Adds every .png, .gif and .webp image found, each named by its file name (with the prefix and suffix);
      shortcodes already taken are skipped unless --overwrite. Prints what failed and why, then the counts.
  emoji list
      Prints this server's emoji: shortcode, category, and whether disabled or unlisted.
  emoji disable <shortcode[@domain]> | emoji enable <shortcode[@domain]>
      A disabled emoji shows nowhere (posts keep their :shortcode: as text) until enabled again; with @domain,
      another server's emoji as seen here.
  emoji copy <shortcode@domain> [--name <shortcode>] [--category <name>] [--unlisted] [--overwrite]
      Adds another server's emoji to this server's own (its image fetched and checked as an upload is).
  emoji remove <shortcode>
      Removes an emoji and its image files.`;

export class EmojiUsageError extends Error {}

/** Archives and folders give at most this many images, and are searched this deep. */
const IMPORT_MAX_FILES = 10_000;
const IMPORT_MAX_DEPTH = 8;
const IMAGE_EXTENSIONS = new Set(['.png', '.gif', '.webp']);

export async function emojiCommand(argv: string[], deps: EmojiCliDeps, out: (line: string) => void): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      category: { type: 'string' },
      prefix: { type: 'string', default: '' },
      suffix: { type: 'string', default: '' },
      overwrite: { type: 'boolean', default: false },
      name: { type: 'string' },
      unlisted: { type: 'boolean', default: false },
    },
  });
  const [command, ...args] = positionals;
  const category = values.category ?? null;
  switch (command) {
    case 'add': {
      const [shortcode, file] = args;
      if (!shortcode || !file || args.length !== 2) throw new EmojiUsageError('emoji add takes a shortcode and an image file');
      const image = await readImageFile(file);
      const { outcome } = await addLocalEmoji(deps, { shortcode, image, category, visibleInPicker: !values.unlisted, overwrite: values.overwrite }, deps.actor ?? null);
      if (outcome === 'exists') throw new Error(`:${shortcode}: already exists (use --overwrite to replace its image)`);
      out(outcome === 'replaced' ? `:${shortcode}: replaced` : `:${shortcode}: added`);
      return;
    }
    case 'import': {
      const [source] = args;
      if (!source || args.length !== 1) throw new EmojiUsageError('emoji import takes a folder or a .tar / .tar.gz file');
      await importEmojis(deps, source, { prefix: values.prefix, suffix: values.suffix, category, visibleInPicker: !values.unlisted, overwrite: values.overwrite }, out);
      return;
    }
    case 'list': {
      for (const e of await listLocalEmojis(deps.db)) {
        const flags = [e.disabled && 'disabled', !e.visible_in_picker && 'unlisted'].filter(Boolean);
        out([`:${e.shortcode}:`, e.category ?? '', flags.length ? `(${flags.join(', ')})` : ''].join('  ').trimEnd());
      }
      return;
    }
    case 'disable':
    case 'enable': {
      const [name] = args;
      if (!name) throw new EmojiUsageError(`emoji ${command} takes a shortcode`);
      const [shortcode, domain] = name.split('@') as [string, string | undefined];
      const row = domain ? await setRemoteEmojiEnabled(deps, shortcode, domain, command === 'enable', deps.actor ?? null) : await setLocalEmojiEnabled(deps, shortcode, command === 'enable', deps.actor ?? null);
      if (!row) throw new Error(`no emoji :${name}:`);
      out(`:${name}: ${command}d`);
      return;
    }
    case 'copy': {
      const [name] = args;
      const [shortcode, domain] = (name ?? '').split('@');
      if (!shortcode || !domain || args.length !== 1) throw new EmojiUsageError('emoji copy takes another server\'s emoji as shortcode@domain');
      if (!deps.remote) throw new Error('emoji copy needs the settings and Redis');
      const normalized = normalizeDomain(domain);
      const remote = normalized ? await findRemoteEmojiByShortcode(deps.db, shortcode, normalized) : null;
      if (!remote) throw new Error(`no emoji :${shortcode}: of ${domain} is known here`);
      const as = values.name ?? shortcode;
      const added = await copyRemoteEmoji({ ...deps, ...deps.remote }, remote, { shortcode: as, category, visibleInPicker: !values.unlisted, overwrite: values.overwrite }, deps.actor ?? null);
      if (added.outcome === 'exists') throw new Error(`:${as}: already exists (use --overwrite to replace its image, or --name to name the copy)`);
      out(`:${as}: ${added.outcome === 'replaced' ? 'replaced' : 'added'} from :${shortcode}@${normalized}:`);
      return;
    }
    case 'remove': {
      const [shortcode] = args;
      if (!shortcode) throw new EmojiUsageError('emoji remove takes a shortcode');
      if (!(await removeLocalEmoji(deps, shortcode, deps.actor ?? null))) throw new Error(`no emoji :${shortcode}:`);
      out(`:${shortcode}: removed`);
      return;
    }
    default:
      throw new EmojiUsageError(command ? `unknown command: emoji ${command}` : 'emoji takes a command');
  }
}

/** A file's bytes, refusing what is no regular file or far too big before reading it. */
async function readImageFile(path: string): Promise<Buffer> {
  const info = await stat(path).catch(() => null);
  if (!info?.isFile()) throw new EmojiRefused(`${path} is not a file`);
  // The size limit itself is the service's; this only keeps a huge file from being read whole.
  if (info.size > EMOJI_SIZE_LIMIT * 4) throw new EmojiRefused(`the image is ${Math.ceil(info.size / 1024)} KB; an emoji must be under ${EMOJI_SIZE_LIMIT / 1024} KB`);
  return readFile(path);
}

interface ImportOptions {
  prefix: string;
  suffix: string;
  category: string | null;
  visibleInPicker: boolean;
  overwrite: boolean;
}

/**
 * Imports a folder or a tar archive (gzipped or not) of images, each its own emoji: one that fails is reported and
 * stores nothing, and the others go on. An archive is unpacked by the system's tar into a private temporary folder
 * (tar keeps members inside it), of which only regular files are read.
 */
async function importEmojis(deps: EmojiCliDeps, source: string, options: ImportOptions, out: (line: string) => void): Promise<void> {
  const info = await stat(source).catch(() => null);
  if (!info) throw new Error(`${source} does not exist`);
  let root = source;
  let unpacked: string | null = null;
  if (info.isFile()) {
    if (!/\.(tar|tar\.gz|tgz)$/i.test(source)) throw new EmojiUsageError('emoji import takes a folder or a .tar / .tar.gz file');
    unpacked = await mkdtemp(join(tmpdir(), 'emoji-import-'));
    try {
      await promisify(execFile)('tar', ['-x', '-f', source, '-C', unpacked, '--no-same-owner', '--no-same-permissions'], { timeout: 60_000 });
    } catch (err) {
      await rm(unpacked, { recursive: true, force: true });
      throw new Error(`${source} could not be unpacked: ${((err as { stderr?: string }).stderr ?? (err as Error).message).trim()}`);
    }
    root = unpacked;
  }
  const counts = { imported: 0, skipped: 0, failed: 0 };
  try {
    for (const file of await imageFiles(root)) {
      const shortcode = `${options.prefix}${basename(file, extname(file))}${options.suffix}`;
      try {
        const { outcome } = await addLocalEmoji(deps, { shortcode, image: await readImageFile(file), category: options.category, visibleInPicker: options.visibleInPicker, overwrite: options.overwrite }, deps.actor ?? null);
        counts[outcome === 'exists' ? 'skipped' : 'imported']++;
      } catch (err) {
        if (!(err instanceof EmojiRefused)) throw err;
        counts.failed++;
        out(`${basename(file)}: ${(err as Error).message}`);
      }
    }
  } finally {
    if (unpacked) await rm(unpacked, { recursive: true, force: true });
  }
  out(`Imported ${counts.imported}, skipped ${counts.skipped}, failed to import ${counts.failed}`);
}

/** The image files (by extension) under a folder, regular files only (no links), in name order. */
async function imageFiles(root: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string, depth: number) => {
    if (depth > IMPORT_MAX_DEPTH) return;
    for (const name of (await readdir(dir)).sort()) {
      if (found.length >= IMPORT_MAX_FILES) return;
      const path = join(dir, name);
      const entry = await lstat(path);
      if (entry.isDirectory()) await walk(path, depth + 1);
      else if (entry.isFile() && IMAGE_EXTENSIONS.has(extname(name).toLowerCase()) && !name.startsWith('._')) found.push(path);
    }
  };
  await walk(root, 0);
  return found;
}
