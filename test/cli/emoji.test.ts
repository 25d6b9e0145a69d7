// Custom emoji: an operator adds them from the command line; apps list them (masto) and see them in posts, profiles and
// polls that use their shortcodes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtemp, mkdir, writeFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import type { mastodon } from 'masto';
import { createRestAPIClient } from 'masto';
import { startListeningServer } from '../helpers/listen.ts';
import type { TestServer } from '../helpers/server.ts';
import { mastoAccounts, tokenOf } from '../helpers/masto.ts';
import { expectEntity } from '../helpers/schema.ts';
import { runCli } from '../../cli/admin.ts';
import { publishTokenInvalidation } from '../../services/token-cache.ts';
import { bearer } from '../helpers/oauth.ts';
import { createContext, closeContext } from '../../server.ts';
import { buildApp } from '../../http/app.ts';

let s: TestServer & { url: string };
let dir: string;
let ana: mastodon.rest.Client;

async function cli(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  await runCli(args, s.ctx.db, (line) => lines.push(line), (what) => publishTokenInvalidation(s.ctx.redis, s.config.redisPrefix, what), {
    redis: s.ctx.redis, redisPrefix: s.config.redisPrefix, config: s.config, fileHost: s.ctx.fileHost,
  });
  return lines;
}

const png = (size = 32, color = '#f80') => sharp({ create: { width: size, height: size, channels: 4, background: color } }).png().toBuffer();
/** A two-frame animated GIF. */
async function animatedGif(): Promise<Buffer> {
  const frames = await Promise.all(['#f00', '#00f'].map((c) => sharp({ create: { width: 24, height: 24, channels: 4, background: c } }).png().toBuffer()));
  return sharp(frames, { join: { animated: true } }).gif({ loop: 0, delay: [100, 100] }).toBuffer();
}
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32"><rect width="32" height="32" fill="red"/></svg>');

async function emojiRows() {
  const { rows } = await s.ctx.db.query('SELECT shortcode, category, disabled, visible_in_picker, image_key, static_key FROM custom_emojis WHERE domain IS NULL ORDER BY shortcode');
  return rows;
}

/** Every file the local file host holds under custom_emojis/. */
async function storedEmojiFiles(): Promise<string[]> {
  const root = join(s.config.dataDir, 'files', 'custom_emojis');
  const out: string[] = [];
  for (const d of await readdir(root).catch(() => [] as string[])) for (const f of await readdir(join(root, d))) out.push(`${d}/${f}`);
  return out;
}

beforeAll(async () => {
  s = await startListeningServer();
  dir = await mkdtemp(join(tmpdir(), 'emoji-test-'));
  ({ ana } = (await mastoAccounts(s.url, 'emoji app', 'ana')) as { ana: mastodon.rest.Client });
});
afterAll(async () => s?.close());

describe('emoji add', () => {
  it('adds PNG, animated GIF and WebP emoji with a still PNG each, listed by masto with their category', async () => {
    await writeFile(join(dir, 'blob.png'), await png());
    await writeFile(join(dir, 'party.gif'), await animatedGif());
    await writeFile(join(dir, 'wave.webp'), await sharp(await png(40, '#0a0')).webp().toBuffer());
    expect(await cli('emoji', 'add', 'blob', join(dir, 'blob.png'), '--category', 'Blobs')).toEqual([':blob: added']);
    expect(await cli('emoji', 'add', 'party_parrot', join(dir, 'party.gif'))).toEqual([':party_parrot: added']);
    expect(await cli('emoji', 'add', 'wave', join(dir, 'wave.webp'), '--unlisted')).toEqual([':wave: added']);

    const listed = await createRestAPIClient({ url: s.url }).v1.customEmojis.list();
    expect(listed.map((e) => e.shortcode)).toEqual(['blob', 'party_parrot']); // unlisted ones stay out of the picker
    for (const e of (await (await fetch(`${s.url}/api/v1/custom_emojis`)).json()) as unknown[]) expectEntity('CustomEmoji', e);
    expect(listed[0]).toMatchObject({ shortcode: 'blob', category: 'Blobs', visibleInPicker: true });
    // The image as given, and a still PNG of the animated one's first frame, both served from the file host.
    const gif = listed[1]!;
    expect(gif.url).toMatch(/\.gif$/);
    const still = Buffer.from(await (await fetch(gif.staticUrl)).arrayBuffer());
    const meta = await sharp(still).metadata();
    expect(meta).toMatchObject({ format: 'png', width: 24, height: 24 });
    expect((await sharp(Buffer.from(await (await fetch(gif.url)).arrayBuffer()), { animated: true }).metadata()).pages).toBe(2);

    expect(await cli('emoji', 'list')).toEqual([':blob:  Blobs', ':party_parrot:', ':wave:    (unlisted)']);
  });

  it('refuses what is no emoji image, storing nothing (no row, no file)', async () => {
    const before = { rows: await emojiRows(), files: await storedEmojiFiles() };
    await writeFile(join(dir, 'text.png'), 'this is not an image');
    await writeFile(join(dir, 'vector.svg'), SVG);
    await writeFile(join(dir, 'vector.png'), SVG); // the format is read from the bytes, never the name
    await writeFile(join(dir, 'big.png'), Buffer.concat([await png(), Buffer.alloc(300 * 1024)])); // over 256 KB
    await writeFile(join(dir, 'huge.png'), await sharp({ create: { width: 2048, height: 16, channels: 3, background: '#000' } }).png().toBuffer());
    await writeFile(join(dir, 'photo.jpg'), await sharp(await png()).flatten().jpeg().toBuffer());
    await writeFile(join(dir, 'cut.png'), (await png(64)).subarray(0, 80));
    const cases: [string[], RegExp][] = [
      [['emoji', 'add', 'text', join(dir, 'text.png')], /not an image/],
      [['emoji', 'add', 'vector', join(dir, 'vector.svg')], /PNG, GIF or WebP.*SVG/],
      [['emoji', 'add', 'vector', join(dir, 'vector.png')], /PNG, GIF or WebP.*SVG/],
      [['emoji', 'add', 'big', join(dir, 'big.png')], /under 256 KB/],
      [['emoji', 'add', 'huge', join(dir, 'huge.png')], /2048×16/],
      [['emoji', 'add', 'photo', join(dir, 'photo.jpg')], /PNG, GIF or WebP.*JPEG/],
      [['emoji', 'add', 'cut', join(dir, 'cut.png')], /could not be decoded|not an image/],
      [['emoji', 'add', 'x', join(dir, 'blob.png')], /not a shortcode/],
      [['emoji', 'add', 'has-dash', join(dir, 'blob.png')], /not a shortcode/],
      [['emoji', 'add', 'missing', join(dir, 'nothing-here.png')], /not a file/],
      [['emoji', 'add', 'blob', join(dir, 'blob.png')], /already exists/],
      [['emoji', 'disable', 'nope'], /no emoji :nope:/],
    ];
    for (const [args, error] of cases) await expect(cli(...args), args.join(' ')).rejects.toThrow(error);
    expect(await emojiRows()).toEqual(before.rows);
    expect(await storedEmojiFiles()).toEqual(before.files);
  });

  it('replaces an image with --overwrite (the old files go), disables, enables and removes', async () => {
    const [old] = (await emojiRows()).filter((r) => r.shortcode === 'blob');
    await writeFile(join(dir, 'blob2.png'), await png(32, '#00f'));
    expect(await cli('emoji', 'add', 'blob', join(dir, 'blob2.png'), '--overwrite', '--category', 'Blobs')).toEqual([':blob: replaced']);
    const files = await storedEmojiFiles();
    expect(files.some((f) => old.image_key.endsWith(f))).toBe(false);
    const [now] = (await emojiRows()).filter((r) => r.shortcode === 'blob');
    expect(files.some((f) => now.image_key.endsWith(f))).toBe(true);

    const list = () => createRestAPIClient({ url: s.url }).v1.customEmojis.list().then((l) => l.map((e) => e.shortcode));
    expect(await list()).toContain('blob');
    expect(await cli('emoji', 'disable', 'blob')).toEqual([':blob: disabled']);
    expect(await list()).not.toContain('blob'); // the kept list follows the change
    expect(await cli('emoji', 'enable', 'blob')).toEqual([':blob: enabled']);
    expect(await list()).toContain('blob');
    await writeFile(join(dir, 'gone.png'), await png());
    await cli('emoji', 'add', 'gone', join(dir, 'gone.png'));
    expect(await cli('emoji', 'remove', 'gone')).toEqual([':gone: removed']);
    expect((await emojiRows()).map((r) => r.shortcode)).not.toContain('gone');
    expect(await storedEmojiFiles()).toEqual(files);
  });
});

describe('emoji import', () => {
  it('imports a folder and a .tar.gz, named by file name with prefix and suffix, skipping taken and reporting bad files', async () => {
    const folder = join(dir, 'pack');
    await mkdir(join(folder, 'sub'), { recursive: true });
    await writeFile(join(folder, 'cat.png'), await png(32, '#888'));
    await writeFile(join(folder, 'sub', 'dog.gif'), await animatedGif());
    await writeFile(join(folder, 'notes.txt'), 'not an emoji at all');
    await writeFile(join(folder, 'broken.png'), 'garbage');
    await writeFile(join(folder, 'icon.svg'), SVG);
    expect(await cli('emoji', 'import', folder, '--prefix', 'pk_', '--category', 'Pack')).toEqual([
      'broken.png: the file is not an image (an emoji must be a PNG, GIF or WebP image)',
      'Imported 2, skipped 0, failed to import 1',
    ]);
    // The same again: taken shortcodes are skipped.
    expect((await cli('emoji', 'import', folder, '--prefix', 'pk_')).at(-1)).toBe('Imported 0, skipped 2, failed to import 1');

    const archive = join(dir, 'pack.tar.gz');
    execFileSync('tar', ['-czf', archive, '-C', folder, '.']);
    expect((await cli('emoji', 'import', archive, '--suffix', '_x')).at(-1)).toBe('Imported 2, skipped 0, failed to import 1');
    const rows = await emojiRows();
    expect(rows.filter((r) => /^pk_|_x$/.test(r.shortcode)).map((r) => [r.shortcode, r.category])).toEqual([
      ['cat_x', null], ['dog_x', null], ['pk_cat', 'Pack'], ['pk_dog', 'Pack'],
    ]);
    expect(rows.some((r) => r.shortcode.includes('broken'))).toBe(false);
    await writeFile(join(dir, 'not.tar.gz'), 'not an archive');
    await expect(cli('emoji', 'import', join(dir, 'not.tar.gz'))).rejects.toThrow(/could not be unpacked/);
  });
});

describe('emoji in posts, profiles and polls', () => {
  it('fills the emojis of a status, its poll and an account with the emoji their texts use, and only those', async () => {
    const status = await ana.v1.statuses.create({ status: 'hello :blob: and :party_parrot::not_an_emoji: :unknown: x:wave:', spoilerText: 'cw :wave:' });
    expectEntity('Status', (await s.app.inject({ method: 'GET', url: `/api/v1/statuses/${status.id}` })).json());
    expect(status.emojis.map((e) => e.shortcode).sort()).toEqual(['blob', 'wave']);
    expect(status.emojis.find((e) => e.shortcode === 'blob')!.url).toMatch(/\/custom_emojis\/.*blob\.png$/);

    const polled = await ana.v1.statuses.create({ status: 'pick one', poll: { options: ['yes :blob:', 'no'], expiresIn: 3600 } });
    // masto's Poll type lacks `emojis`, which Mastodon's entity has.
    const pollEmojis = (p: unknown) => (p as { emojis: { shortcode: string }[] }).emojis.map((e) => e.shortcode);
    expect(pollEmojis(polled.poll)).toEqual(['blob']);
    expect(polled.emojis.map((e) => e.shortcode)).toEqual(['blob']);
    expect(pollEmojis(await ana.v1.polls.$select(polled.poll!.id).fetch())).toEqual(['blob']);

    const me = await ana.v1.accounts.updateCredentials({ displayName: 'Ana :blob:', note: 'hi :party_parrot:', fieldsAttributes: [{ name: 'mood :wave:', value: 'ok' }] });
    expect(me.emojis.map((e) => e.shortcode).sort()).toEqual(['blob', 'party_parrot', 'wave']);
    expectEntity('Account', (await s.app.inject({ method: 'GET', url: `/api/v1/accounts/${me.id}` })).json());
    expect((await ana.v1.accounts.$select(me.id).fetch()).emojis).toHaveLength(3);
    // Lists of accounts too: search, and who favourited a post.
    expect((await ana.v2.search.list({ q: 'ana', type: 'accounts' })).accounts[0]!.emojis).toHaveLength(3);
    await ana.v1.statuses.$select(polled.id).favourite();
    expect((await ana.v1.statuses.$select(polled.id).favouritedBy.list())[0]!.emojis).toHaveLength(3);

    // An edit's history shows each version's emoji.
    await ana.v1.statuses.$select(status.id).update({ status: 'edited :party_parrot: :blob:', spoilerText: '' });
    const history = await ana.v1.statuses.$select(status.id).history.list();
    expect(history.map((h) => h.emojis.map((e) => e.shortcode))).toEqual([['blob'], ['party_parrot', 'blob']]);
    await ana.v1.statuses.$select(status.id).update({ status: 'hello :blob: and :party_parrot::not_an_emoji: :unknown: x:wave:', spoilerText: 'cw :wave:' });

    // The home timeline (rendered from the caches) carries them too, the account's among them.
    const home = await ana.v1.timelines.home.list();
    const shown = home.find((st) => st.id === status.id)!;
    expect(shown.emojis.map((e) => e.shortcode).sort()).toEqual(['blob', 'wave']);
    expect(shown.account.emojis.map((e) => e.shortcode).sort()).toEqual(['blob', 'party_parrot', 'wave']);

    // Disabling an emoji shows at once where it was used, through the caches.
    await cli('emoji', 'disable', 'wave');
    const again = await s.app.inject({ method: 'GET', url: '/api/v1/timelines/home', headers: bearer(tokenOf(ana)) });
    const st = again.json().find((x: { id: string }) => x.id === status.id);
    expect(st.emojis.map((e: { shortcode: string }) => e.shortcode)).toEqual(['blob']);
    expect(st.account.emojis.map((e: { shortcode: string }) => e.shortcode).sort()).toEqual(['blob', 'party_parrot']);
    await cli('emoji', 'enable', 'wave');
    const plain = await ana.v1.statuses.create({ status: 'no emoji here: just colons :: and a:b:c' });
    expect(plain.emojis).toEqual([]);
  });
});

describe('another process', () => {
  it('sees an emoji change in what it keeps (the list, cached statuses and accounts) through the version in Redis', async () => {
    // A second process's parts on the same PostgreSQL and Redis: its own memory, warmed before the change.
    const other = await createContext(s.config);
    const app = await buildApp(other, { logger: false });
    try {
      await app.ready();
      const token = tokenOf(ana);
      const codes = async () => {
        const list = (await app.inject({ method: 'GET', url: '/api/v1/custom_emojis' })).json().map((e: { shortcode: string }) => e.shortcode);
        const home = (await app.inject({ method: 'GET', url: '/api/v1/timelines/home', headers: bearer(token) })).json();
        const st = home.find((x: { content: string }) => x.content.includes('hello :blob:'));
        return { listed: list.includes('blob'), status: st.emojis.length, account: st.account.emojis.map((e: { shortcode: string }) => e.shortcode).includes('blob') };
      };
      expect(await codes()).toEqual({ listed: true, status: 2, account: true });
      await cli('emoji', 'disable', 'blob');
      expect(await codes()).toEqual({ listed: false, status: 1, account: false });
      await cli('emoji', 'enable', 'blob');
      expect(await codes()).toEqual({ listed: true, status: 2, account: true });
    } finally {
      await app.close();
      await closeContext(other);
    }
  });
});
