// Operator commands about relays: `npm run cli -- relay …` (dispatched from cli/admin.ts).
import type { Config } from '../config.ts';
import type { Db } from '../storage/db.ts';
import type { RedisClient } from '../storage/redis.ts';
import { listRelays, type RelayRow } from '../storage/relays.ts';
import { addRelay, RelayInputError, removeRelay } from '../services/relays.ts';
import type { Actor } from '../services/action-log.ts';

export const RELAYS_USAGE = `  relay add <url>
      Subscribes to a relay: a Mastodon-style relay's inbox (https://relay.example/inbox) or a LitePub relay's actor
      (https://relay.example/actor; Pleroma's, activityrelay, AodeRelay). A running server's worker looks at the URL,
      sends the Follow from the instance actor, and the relay's answer makes it accepted or rejected. Once accepted,
      public posts are sent to the relay, and the public posts it relays show in the federated timeline.
  relay remove <url>
      Leaves a relay: sends the Undo of our Follow, and nothing more goes to it or is taken from it.
  relay list
      Prints each relay with its state (pending, accepted, rejected), its kind, and its inbox.`;

export class RelaysUsageError extends Error {}

export interface RelaysCliDeps {
  db: Db;
  redis: RedisClient;
  config: Config;
  /** The audit log's actor: the --as operator's account, or null for the shell's operator. */
  actor?: Actor;
}

function describe(r: RelayRow): string {
  return `${r.url}  ${r.state}  ${r.kind ?? 'kind not known yet'}${r.inbox_url && r.inbox_url !== r.url ? `  inbox ${r.inbox_url}` : ''}`;
}

export async function relaysCommand(argv: string[], deps: RelaysCliDeps, out: (line: string) => void): Promise<void> {
  const [command, ...args] = argv;
  const one = () => {
    if (args.length !== 1) throw new RelaysUsageError(`relay ${command} takes one URL`);
    return args[0]!;
  };
  try {
    switch (command) {
      case 'add': {
        // No job queue here: the Follow waits in the outbox for a running server's sweeper.
        const relay = await addRelay(deps, one(), deps.actor ?? null);
        out(`${relay.url} is pending: the Follow is sent by a running server, and the relay's answer recorded`);
        return;
      }
      case 'remove': {
        const relay = await removeRelay(deps, one(), deps.actor ?? null);
        out(`${relay.url} removed${relay.kind ? '; the Undo of our Follow is sent by a running server' : ''}`);
        return;
      }
      case 'list': {
        if (args.length > 0) throw new RelaysUsageError('relay list takes no arguments');
        const relays = await listRelays(deps.db);
        if (relays.length === 0) out('no relays');
        for (const r of relays) out(describe(r));
        return;
      }
      default:
        throw new RelaysUsageError(command ? `unknown command: relay ${command}` : 'relay add, relay remove or relay list');
    }
  } catch (err) {
    if (err instanceof RelayInputError) throw new Error(err.message); // said plainly, without the usage
    throw err;
  }
}
