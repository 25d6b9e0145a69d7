import { startTestServer, type TestServer } from './server.ts';
import { freePort } from './listen.ts';

export interface Instance extends TestServer {
  /** Host and port: the domain in this instance's handles. */
  domain: string;
  url: string;
  /** Stops answering on its port (connections refused), as a server that is down; and comes back. */
  goOffline(): Promise<void>;
  goOnline(): Promise<void>;
}

/**
 * A server that other test servers reach as a real https origin on loopback (`https://localhost:<port>`), with the
 * certificate signed by this run's test authority (test/helpers/tls.ts), and allowed to fetch loopback addresses.
 */
export async function startHttpsInstance(overrides: Record<string, string> = {}): Promise<Instance> {
  const port = await freePort();
  const domain = `localhost:${port}`;
  const server = await startTestServer({
    LOCAL_DOMAIN: domain,
    TLS_CERT_FILE: process.env.TEST_TLS_CERT_FILE!,
    TLS_KEY_FILE: process.env.TEST_TLS_KEY_FILE!,
    ALLOW_PRIVATE_ADDRESSES: 'true',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // Deliveries to a server that is down are tried again soon, not after the production half minute.
    DELIVERY_RETRY_BASE_MS: '300',
    ...overrides,
  });
  await server.app.listen({ port, host: '127.0.0.1' });
  const http = server.app.server;
  return {
    ...server,
    domain,
    url: `https://${domain}`,
    async goOffline() {
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
    async goOnline() {
      await new Promise<void>((resolve) => http.listen(port, '127.0.0.1', () => resolve()));
    },
  };
}

/** Polls `read` until `ok` holds of its value (effects crossing servers travel through queues), then returns it. */
export async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let value = await read();
  while (!ok(value)) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}; last value: ${JSON.stringify(value)?.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 50));
    value = await read();
  }
  return value;
}
