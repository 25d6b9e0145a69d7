import { freePort } from '../../cli/ports.ts';
import { startTestServer, type TestServer } from './server.ts';

export { freePort } from '../../cli/ports.ts';

/** A test server on a real socket, with LOCAL_DOMAIN matching it so the URLs it hands out work. */
export async function startListeningServer(overrides: Record<string, string> = {}): Promise<TestServer & { url: string }> {
  const port = await freePort();
  const server = await startTestServer({ LOCAL_DOMAIN: `127.0.0.1:${port}`, ...overrides });
  await server.app.listen({ port, host: '127.0.0.1' });
  return { ...server, url: `http://127.0.0.1:${port}` };
}
