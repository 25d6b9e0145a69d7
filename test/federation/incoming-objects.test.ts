import { describe, expect, it } from 'vitest';
import { Object as APObject } from '@fedify/vocab';
import { blurhashOf, focusOf, isStatusObject, mediaOf, pageUrlOf, statusTextOf, statusUrlOf, type StatusObject } from '../../federation/incoming-objects.ts';

// How objects of other servers read as statuses (federation/incoming-objects.ts), without a server: the edge cases
// the end-to-end tests (test/federation/other-software.test.ts) leave out.
const AS = 'https://www.w3.org/ns/activitystreams';
const parse = async (json: Record<string, unknown>) => {
  const object = await APObject.fromJsonLd({ '@context': AS, ...json });
  if (!isStatusObject(object)) throw new Error(`not a status object: ${String(json.type)}`);
  return object as StatusObject;
};
const LINK = (href: string) => `<a href="${href}" rel="nofollow noopener noreferrer" target="_blank">${href}</a>`;

describe('status text', () => {
  it('takes Note and Question as they are, and no other type but the converted ones', async () => {
    const note = await parse({ type: 'Note', id: 'https://a.example/n/1', content: '<p>hi <script>x()</script></p>', summary: 'cw' });
    expect(statusTextOf(note)).toEqual({ content: '<p>hi </p>', spoilerText: 'cw', language: null });
    for (const type of ['ChatMessage', 'Document', 'Tombstone', 'Collection']) {
      expect(isStatusObject(await APObject.fromJsonLd({ '@context': AS, type, id: `https://a.example/${type}` })), type).toBe(false);
    }
  });

  it('converts every converted type: escaped title, summary wrapped when it is bare text, link to its id without a url', async () => {
    for (const type of ['Article', 'Page', 'Video', 'Event', 'Image', 'Audio']) {
      const id = `https://a.example/${type}/1`;
      const object = await parse({ type, id, name: 'Fish & <chips>', summary: 'A <em>short</em> one', content: '<p>never shown</p>' });
      expect(statusTextOf(object).content, type).toBe(`<h2>Fish &amp; &lt;chips&gt;</h2><p>A <em>short</em> one</p><p>${LINK(id)}</p>`);
      expect(statusTextOf(object).spoilerText).toBe('');
    }
    const untitled = await parse({ type: 'Article', id: 'https://a.example/a/2', summary: '<p>Already a paragraph</p>' });
    expect(statusTextOf(untitled).content).toBe(`<p>Already a paragraph</p><p>${LINK('https://a.example/a/2')}</p>`);
  });

  it('links the text/html url of several, and keeps a url of another host out of the status url', async () => {
    const video = await parse({ type: 'Video', id: 'https://v.example/videos/watch/1', url: [
      { type: 'Link', mediaType: 'video/mp4', href: 'https://cdn.example/1.mp4' },
      { type: 'Link', mediaType: 'text/html', href: 'https://v.example/w/1' },
    ] });
    expect(pageUrlOf(video)).toBe('https://v.example/w/1');
    expect(statusUrlOf(video)).toBe('https://v.example/w/1');
    const elsewhere = await parse({ type: 'Page', id: 'https://l.example/post/1', url: 'https://phish.example/login' });
    expect(statusUrlOf(elsewhere)).toBe(null);
    const script = await parse({ type: 'Article', id: 'https://b.example/?p=1', url: 'javascript:alert(1)' });
    expect(statusTextOf(script).content).toContain(LINK('https://b.example/?p=1'));
  });

  it('shows a Note without content from its plain-text source, and nothing from a source of another type', async () => {
    const plain = await parse({ type: 'Note', id: 'https://p.example/n/1', source: { content: 'line one\nsee https://x.example\n\n<b>two</b>', mediaType: 'text/plain' } });
    expect(statusTextOf(plain).content).toBe('<p>line one<br />see <a href="https://x.example" target="_blank" rel="nofollow noopener noreferrer">https://x.example</a></p><p>&lt;b&gt;two&lt;/b&gt;</p>');
    const bbcode = await parse({ type: 'Note', id: 'https://p.example/n/2', source: { content: '[b]x[/b]', mediaType: 'text/bbcode' } });
    expect(statusTextOf(bbcode).content).toBe('');
    // Misskey's MFM is not plain text: without its HTML content, nothing of it is shown raw.
    const mfm = await parse({ type: 'Note', id: 'https://mk.example/notes/1', source: { content: '$[spin 🍮] **hi**', mediaType: 'text/x.misskeymarkdown' } });
    expect(statusTextOf(mfm).content).toBe('');
    const both = await parse({ type: 'Note', id: 'https://mk.example/notes/2', content: '<p><span><i>🍮</i> <b>hi</b></span></p>', source: { content: '$[spin 🍮] **hi**', mediaType: 'text/x.misskeymarkdown' } });
    expect(statusTextOf(both).content).toBe('<p><span><i>🍮</i> <b>hi</b></span></p>');
  });

  it('puts an Event\'s times in the text, without a place it cannot read', async () => {
    const event = await parse({ type: 'Event', id: 'https://m.example/e/1', name: 'Meet', startTime: '2026-05-01T09:30:00+02:00' });
    expect(statusTextOf(event).content).toBe(`<h2>Meet</h2><p>2026-05-01 07:30 UTC</p><p>${LINK('https://m.example/e/1')}</p>`);
    expect(statusTextOf(event, { location: { type: 'Place', name: 'Hall', address: 'not an object' } }).content).toContain('<p>2026-05-01 07:30 UTC<br />Hall</p>');
  });
});

describe('attachments', () => {
  it('keeps blurhash, focal point and description as sent, and drops what is malformed', async () => {
    const note = await parse({ type: 'Note', id: 'https://p.example/n/3', attachment: [
      { type: 'Image', url: 'https://p.example/1.jpg', mediaType: 'image/jpeg', name: 'alt', width: 10, height: 20 },
      { type: 'Document', url: 'https://p.example/2.png', mediaType: 'image/png', summary: 'from summary', name: 'not this' },
      { type: 'Document', url: 'ftp://p.example/3.bin' },
      { type: 'Link', href: 'https://p.example/page' },
      { type: 'Audio', url: { type: 'Link', href: 'https://p.example/4.ogg' } },
    ] });
    const raw = { attachment: [
      { url: 'https://p.example/1.jpg', blurhash: 'LEHV6nWB2yk8pyo0adR*.7kCMdnj', focalPoint: [0.25, -1] },
      { url: 'https://p.example/2.png', summary: 'from summary', blurhash: '<script>', focalPoint: [2, 0] },
    ] };
    const media = await mediaOf(note, { raw, rejectMedia: false });
    expect(media).toEqual([
      { type: 'image', remoteUrl: 'https://p.example/1.jpg', contentType: 'image/jpeg', description: 'alt', width: 10, height: 20, blurhash: 'LEHV6nWB2yk8pyo0adR*.7kCMdnj', focus: { x: 0.25, y: -1 } },
      { type: 'image', remoteUrl: 'https://p.example/2.png', contentType: 'image/png', description: 'from summary', width: null, height: null, blurhash: null, focus: null },
      { type: 'audio', remoteUrl: 'https://p.example/4.ogg', contentType: null, description: '', width: null, height: null, blurhash: null, focus: null },
    ]);
    expect((await mediaOf(note, { raw, rejectMedia: true })).map((m) => m.type)).toEqual(['unknown', 'unknown', 'unknown']);
  });

  it('validates blurhashes and focal points as Mastodon would keep them', () => {
    expect(blurhashOf('U9Eyb[%M00of~qayRjWB00WB?bt7%MRjxuof')).toBe('U9Eyb[%M00of~qayRjWB00WB?bt7%MRjxuof');
    for (const bad of ['', 'abc', 'x'.repeat(300), 'has space here', 42, null, { a: 1 }]) expect(blurhashOf(bad)).toBe(null);
    expect(focusOf([0.5, '-0.5'])).toEqual({ x: 0.5, y: -0.5 });
    expect(focusOf({ '@list': [0.1, 0.2] })).toEqual({ x: 0.1, y: 0.2 });
    for (const bad of [[1.5, 0], [0], [0, 0, 0], 'x', [NaN, 0], null]) expect(focusOf(bad)).toBe(null);
  });

  it('gives a Video without attachments its largest preview image', async () => {
    const video = await parse({ type: 'Video', id: 'https://v.example/videos/watch/2', name: 'Clip', icon: [
      { type: 'Image', url: 'https://v.example/small.jpg', mediaType: 'image/jpeg', width: 280, height: 157 },
      { type: 'Image', url: 'https://v.example/large.jpg', mediaType: 'image/jpeg', width: 850, height: 480 },
    ] });
    expect(await mediaOf(video, { raw: null, rejectMedia: false })).toEqual([
      { type: 'image', remoteUrl: 'https://v.example/large.jpg', contentType: 'image/jpeg', description: 'Clip', width: 850, height: 480, blurhash: null, focus: null },
    ]);
    const article = await parse({ type: 'Article', id: 'https://b.example/a', image: { type: 'Image', url: 'https://b.example/i.jpg' } });
    expect(await mediaOf(article, { raw: null, rejectMedia: false })).toEqual([]);
  });

  it("gives a Video without attachments its tallest MP4 within the size cap, with its preview image; never a playlist's fragment", async () => {
    const json = { type: 'Video', id: 'https://v.example/videos/watch/3', name: 'Jam', icon: [{ type: 'Image', url: 'https://v.example/p.jpg', mediaType: 'image/jpeg', width: 850, height: 480 }], url: [
      { type: 'Link', mediaType: 'text/html', href: 'https://v.example/w/3' },
      { type: 'Link', mediaType: 'video/mp4', href: 'https://v.example/3-1080.mp4', height: 1080, width: 1920, size: 9_000 },
      { type: 'Link', mediaType: 'video/mp4', href: 'https://v.example/3-720.mp4', height: 720, width: 1280, size: 5_000 },
      { type: 'Link', mediaType: 'video/mp4', href: 'https://v.example/3-audio.mp4', height: 0, size: 100, attachment: [{ type: 'PropertyValue', name: 'ffprobe_codec_type', value: 'audio' }] },
      { type: 'Link', mediaType: 'video/mp4', href: 'ftp://v.example/3-4k.mp4', height: 2160 },
      { type: 'Link', mediaType: 'application/x-bittorrent', href: 'https://v.example/3-720.torrent', height: 720 },
      { type: 'Link', mediaType: 'application/x-mpegURL', href: 'https://v.example/3/master.m3u8', tag: [{ type: 'Link', mediaType: 'video/mp4', href: 'https://v.example/3-frag.mp4', height: 2160 }] },
    ] };
    const video = await parse(json);
    const [media] = await mediaOf(video, { raw: json, rejectMedia: false, maxVideoBytes: 8_000 });
    expect(media).toMatchObject({ type: 'video', remoteUrl: 'https://v.example/3-720.mp4', contentType: 'video/mp4', description: 'Jam', width: 1280, height: 720, previewUrl: 'https://v.example/p.jpg' });
    // The sizes not at hand (the object's JSON was not kept): the tallest file is tried, its copy capped all the same.
    expect((await mediaOf(video, { raw: null, rejectMedia: false, maxVideoBytes: 8_000 }))[0]).toMatchObject({ remoteUrl: 'https://v.example/3-1080.mp4' });
    expect((await mediaOf(video, { raw: json, rejectMedia: true, maxVideoBytes: 8_000 }))[0]).toMatchObject({ type: 'unknown', remoteUrl: 'https://v.example/3-720.mp4' });
    const none = await mediaOf(video, { raw: json, rejectMedia: false, maxVideoBytes: 1_000 });
    expect(none).toEqual([{ type: 'image', remoteUrl: 'https://v.example/p.jpg', contentType: 'image/jpeg', description: 'Jam', width: 850, height: 480, blurhash: null, focus: null }]);
  });
});
