import { createServer } from 'node:net';
import { startTestServer, type TestServer } from './server.ts';

/** A port nobody is using right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** A test server on a real socket, with LOCAL_DOMAIN matching it so the URLs it hands out work. */
export async function startListeningServer(overrides: Record<string, string> = {}): Promise<TestServer & { url: string }> {
  const port = await freePort();
  const server = await startTestServer({ LOCAL_DOMAIN: `127.0.0.1:${port}`, ...overrides });
  await server.app.listen({ port, host: '127.0.0.1' });
  return { ...server, url: `http://127.0.0.1:${port}` };
}
