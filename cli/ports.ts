import { connect, createServer } from 'node:net';
import { readFileSync } from 'node:fs';
import { randomInt } from 'node:crypto';

/**
 * The first port the kernel hands out as the local port of outgoing connections (Linux's ip_local_port_range), or
 * null where that cannot be read.
 */
function ephemeralPortsStart(): number | null {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : null;
  } catch {
    return null;
  }
}

/** Whether a listener can take the port on 127.0.0.1 now (it is let go at once). */
function bindable(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(null));
    srv.listen(port, '127.0.0.1', () => {
      const { port: bound } = srv.address() as { port: number };
      srv.close(() => resolve(bound));
    });
  });
}

/**
 * A port nobody is using right now, for a process started next to listen on. Taken below the range the kernel gives
 * outgoing connections their local ports from: a port from that range (port 0's choice) could become the local port
 * of some connection in the moment before the process listens on it (seen as EADDRINUSE with many connections open).
 */
export async function freePort(): Promise<number> {
  const start = ephemeralPortsStart();
  if (start !== null) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = await bindable(randomInt(10_000, start));
      if (port !== null) return port;
    }
  }
  const port = await bindable(0);
  if (port === null) throw new Error('no free port');
  return port;
}

/** Resolves once something accepts TCP connections on the port (or rejects after `ms`). */
export async function listening(port: number, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`nothing listens on ${port} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
