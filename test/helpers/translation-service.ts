// A machine translation service on loopback, answering in DeepL's or LibreTranslate's documented API shapes: it
// "translates" by putting the target language before each word, and records what it was asked.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- service bodies

export interface FakeService {
  url: string;
  requests: { method: string; path: string; headers: IncomingMessage['headers']; body: Json }[];
  /** The next answers' status, for the failure cases (200 otherwise). */
  failWith: number | null;
  close(): Promise<void>;
}

/** "Translates" each text by putting the target language in front of every word outside tags, entities and `translate="no"`. */
const mark = (html: string, target: string) => html.split(/(<span translate="no">[^<]*<\/span>|<[^>]*>|&[a-z#0-9]+;)/i).map((part) => (/^[<&]/.test(part) ? part : part.replace(/([A-Za-z]+)/g, `${target}:$1`))).join('');

export async function fakeService(kind: 'deepl' | 'libretranslate'): Promise<FakeService> {
  const service: FakeService = { url: '', requests: [], failWith: null, close: async () => {} };
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      const body = raw ? JSON.parse(raw) : null;
      service.requests.push({ method: req.method!, path: req.url!, headers: req.headers, body });
      const send = (status: number, value: Json) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(value)); };
      if (service.failWith) return send(service.failWith, { message: 'refused' });
      if (kind === 'deepl') {
        if (req.headers.authorization !== 'DeepL-Auth-Key test-key:fx') return send(403, { message: 'Wrong key' });
        if (req.url === '/v2/languages?type=source') return send(200, [{ language: 'DE', name: 'German' }, { language: 'EN', name: 'English' }, { language: 'JA', name: 'Japanese' }]);
        if (req.url === '/v2/languages?type=target') return send(200, [{ language: 'DE', name: 'German', supports_formality: true }, { language: 'EN-GB', name: 'English (British)' }, { language: 'EN-US', name: 'English (American)' }, { language: 'JA', name: 'Japanese' }]);
        if (req.url === '/v2/translate' && req.method === 'POST') {
          const target = String(body.target_lang).toLowerCase();
          return send(200, { translations: body.text.map((t: string) => ({ detected_source_language: body.source_lang ?? 'EN', text: t.includes('evil') ? `${mark(t, target)}<script>alert(1)</script>` : mark(t, target) })) });
        }
      } else {
        if (req.url === '/languages') return send(200, [{ code: 'en', name: 'English', targets: ['en', 'de', 'fr'] }, { code: 'de', name: 'German', targets: ['de', 'en'] }]);
        if (req.url === '/translate' && req.method === 'POST') {
          return send(200, { translatedText: body.q.map((t: string) => mark(t, body.target)), ...(body.source === 'auto' ? { detectedLanguage: body.q.map(() => ({ confidence: 90, language: 'en' })) } : {}) });
        }
      }
      send(404, { error: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  service.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  service.close = () => new Promise((resolve) => server.close(() => resolve()));
  return service;
}

