import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MediaOrigin {
  url: string;
  /** GETs by path. */
  hits: Map<string, number>;
  close(): Promise<void>;
}

/** Where another server keeps its files (a CDN of its own, as many servers have), on loopback, counting every GET. */
export async function mediaOrigin(files: Record<string, { type: string; body: Buffer }>): Promise<MediaOrigin> {
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
    const file = files[req.url!];
    if (!file) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': file.type, 'content-length': file.body.length }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, close: () => new Promise<void>((r) => server.close(() => r())) };
}
