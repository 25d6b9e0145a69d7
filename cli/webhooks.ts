// Operators' webhooks: `npm run cli -- webhooks …` (dispatched from cli/admin.ts), over the same service as the
// operators' page (services/webhooks.ts). Run with --as <username>, the operator's role must be able to manage
// webhooks (services/roles.ts).
import { parseArgs } from 'node:util';
import type { Db } from '../storage/db.ts';
import { listWebhooks } from '../storage/webhooks.ts';
import { isId } from '../storage/ids.ts';
import type { Actor } from '../services/action-log.ts';
import { createWebhook, removeWebhook, WEBHOOK_EVENTS } from '../services/webhooks.ts';
import { ApiError } from '../errors.ts';

export const WEBHOOKS_USAGE = `  webhooks add <url> --events <event,event…>
      Adds a webhook (enabled) and prints its id and secret. Events: ${WEBHOOK_EVENTS.join(', ')}. Each event is
      POSTed as JSON signed with the secret (X-Hub-Signature: sha256=<hex HMAC-SHA256 of the body>).
  webhooks list
      Prints every webhook: id, enabled or disabled, URL and events.
  webhooks remove <id>
      Removes a webhook.`;

export class WebhooksUsageError extends Error {}

export async function webhooksCommand(argv: string[], deps: { db: Db; actor?: Actor }, out: (line: string) => void): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { events: { type: 'string' } } });
  const [command, arg, ...rest] = positionals;
  if (rest.length > 0) throw new WebhooksUsageError(`unexpected argument: ${rest[0]}`);
  switch (command) {
    case 'add': {
      if (!arg) throw new WebhooksUsageError('webhooks add takes the URL');
      if (!values.events) throw new WebhooksUsageError(`--events is required (${WEBHOOK_EVENTS.join(', ')})`);
      try {
        const row = await createWebhook(deps.db, { url: arg, events: values.events.split(',') }, deps.actor ?? null);
        out(`${row.id}  secret ${row.secret}`);
      } catch (err) {
        throw err instanceof ApiError ? new WebhooksUsageError(err.message) : err;
      }
      return;
    }
    case 'list': {
      const rows = await listWebhooks(deps.db);
      for (const w of rows) out(`${w.id}  ${w.enabled ? 'enabled' : 'disabled'}  ${w.url}  ${w.events.join(',')}`);
      if (rows.length === 0) out('no webhooks');
      return;
    }
    case 'remove': {
      if (!arg || !isId(arg)) throw new WebhooksUsageError('webhooks remove takes the id of a webhook (see webhooks list)');
      try {
        await removeWebhook(deps.db, arg, deps.actor ?? null);
      } catch (err) {
        if (err instanceof ApiError && err.statusCode === 404) throw new Error(`no webhook with id ${arg}`);
        throw err;
      }
      out(`webhook ${arg} removed`);
      return;
    }
    default:
      throw new WebhooksUsageError(`unknown command: webhooks ${command ?? ''}`.trim());
  }
}
