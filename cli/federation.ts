// Operator commands about other servers: `npm run cli -- federation …` (dispatched from cli/admin.ts).
import type { Config } from '../config.ts';
import type { Db } from '../storage/db.ts';
import { listServerHealth, type ServerHealthRow } from '../storage/federation-health.ts';
import { checkRemote, type CheckLine } from '../federation/check.ts';

export const FEDERATION_USAGE = `  federation servers [--limit <n>]
      Prints each remote server we talk to: last successful delivery and fetch, failure counts, inbound activities
      dropped, the signature spec it takes, and the latest failure (what, status, an excerpt of the answer).
      Servers with the latest trouble come first. Each process writes what it saw every 10 seconds.
  federation check <user@domain | https://…>
      Resolves a handle by WebFinger (or takes an actor's or post's URL), fetches it unsigned and signed by this
      server's instance actor, parses it, and prints the keys found and what failed (DNS, TLS, a 401 on an
      unsigned GET, 404, bad JSON-LD). Sends nothing.`;

export class FederationUsageError extends Error {}

export interface FederationCliDeps {
  db: Db;
  config: Config;
}

const when = (d: Date | null) => (d ? d.toISOString().replace(/\.\d+Z$/, 'Z') : 'never');

function describe(s: ServerHealthRow): string[] {
  const lines = [
    `${s.host}`,
    `  delivered: ${s.deliveries} (last ${when(s.last_delivery_at)}), failed attempts: ${s.delivery_failures}`,
    `  fetched: ${s.fetches} (last ${when(s.last_fetch_at)}), failed: ${s.fetch_failures}`,
    `  inbound dropped: ${s.dropped_inbound}${s.last_drop_at ? ` (last ${when(s.last_drop_at)}: ${s.last_drop_reason})` : ''}`,
    `  signature spec: ${s.signature_spec ?? 'unknown'}`,
  ];
  if (s.last_failure_at) {
    const status = s.last_failure_status === null ? 'no answer' : `HTTP ${s.last_failure_status}`;
    lines.push(`  last failure: ${when(s.last_failure_at)} ${s.last_failure_kind} ${status}${s.last_failure_url ? ` ${s.last_failure_url}` : ''}: ${s.last_failure_detail ?? ''}`);
  }
  return lines;
}

/** The verdict: the first step that stops federation, or what works. A refused unsigned GET alone stops nothing. */
function verdict(lines: CheckLine[]): string {
  const failed = (step: string) => lines.find((l) => l.step.endsWith(step) && !l.ok);
  const blocking = lines.find((l) => !l.ok && !l.step.endsWith('unsigned GET'));
  if (blocking) return `result: FAILED at ${blocking.step}: ${blocking.detail}`;
  const unsigned = failed('unsigned GET');
  if (unsigned) return `result: reachable with signed fetches only (${unsigned.detail.split(':')[0]})`;
  return 'result: reachable, signed and unsigned';
}

export async function federationCommand(argv: string[], deps: FederationCliDeps, out: (line: string) => void): Promise<void> {
  const [command, ...args] = argv;
  switch (command) {
    case 'servers': {
      const i = args.indexOf('--limit');
      const limit = i >= 0 ? Number(args[i + 1]) : 100;
      if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new FederationUsageError('--limit takes a whole number from 1 to 10000');
      const servers = await listServerHealth(deps.db, limit);
      if (servers.length === 0) out('no remote servers seen yet');
      for (const s of servers) for (const line of describe(s)) out(line);
      return;
    }
    case 'check': {
      const target = args[0];
      if (!target || args.length > 1) throw new FederationUsageError('federation check takes one handle (user@domain) or URL');
      const lines = await checkRemote(deps, target);
      for (const l of lines) out(`${l.ok ? 'ok  ' : 'FAIL'}  ${l.step}: ${l.detail}`);
      out(verdict(lines));
      return;
    }
    default:
      throw new FederationUsageError(command ? `unknown command: federation ${command}` : 'federation servers or federation check');
  }
}
