// Operator commands for instance-wide domain blocks and allows: `npm run cli -- domains …` (dispatched from cli/admin.ts).
import { parseArgs } from 'node:util';
import type { RedisClient } from '../storage/redis.ts';
import type { Db } from '../storage/db.ts';
import { CacheVersions } from '../storage/cache-versions.ts';
import { removeFromOutbox } from '../storage/outbox.ts';
import {
  domainAllowsPage, domainBlockRuleFor, domainBlocksPage, findDomainAllowByDomain, findDomainBlockByDomain,
  type DomainBlockRow, type DomainSeverity,
} from '../storage/instance-domain-blocks.ts';
import {
  createDomainAllow, createDomainBlock, deleteDomainAllow, deleteDomainBlock, SEVERITIES, updateDomainBlock,
  validDomain, type DomainAdminDeps, type DomainBlockInput,
} from '../services/domain-blocks.ts';
import type { Actor } from '../services/action-log.ts';
import { applyDomainBlock, type DomainBlockOutcome } from '../jobs/domain-blocks.ts';

export const DOMAINS_USAGE = `  domains block <domain> [--severity silence|suspend|noop] [--reject-media] [--reject-reports] [--obfuscate]
                 [--public-comment <text>] [--private-comment <text>]
      Blocks a server and its subdomains (silence by default; suspend: nothing is received from, sent to or fetched
      from it, and its accounts here are suspended). Run again to change an existing block's options.
  domains unblock <domain>
      Lifts the block (accounts it suspended are unsuspended).
  domains allow <domain> / domains disallow <domain>
      Adds or removes a server on the allow list (what LIMITED_FEDERATION_MODE federates with).
  domains list
      Prints the blocks (severity, domain, options, comments), then the allowed domains.`;

export class DomainsUsageError extends Error {}

export interface DomainsCliDeps {
  db: Db;
  redis: RedisClient;
  redisPrefix: string;
  /** Who the audit log names: the --as operator's account, or null (the shell's operator). */
  actor?: Actor;
}

function describe(b: DomainBlockRow): string {
  const options = [b.reject_media && 'reject-media', b.reject_reports && 'reject-reports', b.obfuscate && 'obfuscate'].filter(Boolean);
  const comments = [b.public_comment && `public: ${JSON.stringify(b.public_comment)}`, b.private_comment && `private: ${JSON.stringify(b.private_comment)}`].filter(Boolean);
  return [b.severity.padEnd(8), b.domain, ...(options.length ? [`[${options.join(', ')}]`] : []), ...comments].join('  ');
}

function outcomeLine(o: DomainBlockOutcome): string | null {
  const parts = [
    o.suspended && `${o.suspended} account(s) suspended`,
    o.unsuspended && `${o.unsuspended} account(s) unsuspended`,
    o.mediaRejected && `${o.mediaRejected} avatar(s), header(s) or attachment(s) no longer shown inline`,
  ].filter(Boolean);
  return parts.length ? parts.join('; ') : null;
}

export async function domainsCommand(argv: string[], deps: DomainsCliDeps, out: (line: string) => void): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      severity: { type: 'string' },
      'reject-media': { type: 'boolean' },
      'reject-reports': { type: 'boolean' },
      obfuscate: { type: 'boolean' },
      'public-comment': { type: 'string' },
      'private-comment': { type: 'string' },
    },
  });
  const [command, domainArg, ...rest] = positionals;
  if (rest.length > 0) throw new DomainsUsageError(`unexpected argument: ${rest[0]} (quote comments)`);
  const versions = new CacheVersions(deps.redis, deps.redisPrefix);
  // The job that applies a block to the domain's accounts runs here and now, so the operator sees what it did; its
  // outbox row stays for the server's sweeper only if this process dies first.
  const outcomes: DomainBlockOutcome[] = [];
  const admin: DomainAdminDeps = {
    db: deps.db,
    redis: deps.redis,
    redisPrefix: deps.redisPrefix,
    enqueue: async (row) => {
      const payload = row.payload as { domain: string; createdAt: string };
      outcomes.push(await applyDomainBlock({ db: deps.db, versions }, payload.domain, payload.createdAt));
      await removeFromOutbox(deps.db, row.id);
    },
  };
  const report = () => {
    for (const o of outcomes) {
      const line = outcomeLine(o);
      if (line) out(line);
    }
  };
  const needDomain = () => {
    if (!domainArg) throw new DomainsUsageError(`domains ${command} takes a domain`);
    return validDomain(domainArg);
  };

  switch (command) {
    case 'block': {
      const domain = needDomain();
      if (values.severity !== undefined && !SEVERITIES.includes(values.severity as DomainSeverity)) {
        throw new DomainsUsageError('--severity is silence, suspend or noop');
      }
      const input: DomainBlockInput = {
        ...(values.severity !== undefined ? { severity: values.severity as DomainSeverity } : {}),
        ...(values['reject-media'] !== undefined ? { reject_media: values['reject-media'] } : {}),
        ...(values['reject-reports'] !== undefined ? { reject_reports: values['reject-reports'] } : {}),
        ...(values.obfuscate !== undefined ? { obfuscate: values.obfuscate } : {}),
        ...(values['public-comment'] !== undefined ? { public_comment: values['public-comment'] } : {}),
        ...(values['private-comment'] !== undefined ? { private_comment: values['private-comment'] } : {}),
      };
      const own = await findDomainBlockByDomain(deps.db, domain);
      if (own) {
        const updated = (await updateDomainBlock(admin, own.id, input, deps.actor ?? null))!;
        out(`block on ${domain} changed: ${describe(updated)}`);
      } else {
        const result = await createDomainBlock(admin, domain, input, deps.actor ?? null);
        if ('existing' in result) throw new Error(`${domain} is already covered by the block on ${result.existing.domain} (${result.existing.severity}); change that one instead`);
        out(`${domain} blocked (${result.block.severity}), id ${result.block.id}`);
      }
      report();
      return;
    }
    case 'unblock': {
      const domain = needDomain();
      const own = await findDomainBlockByDomain(deps.db, domain);
      if (!own) {
        const above = await domainBlockRuleFor(deps.db, domain);
        throw new Error(above ? `${domain} has no block of its own; it is covered by the block on ${above.domain}` : `${domain} is not blocked`);
      }
      await deleteDomainBlock(admin, own.id, deps.actor ?? null);
      out(`${domain} unblocked`);
      report();
      return;
    }
    case 'allow': {
      const allow = await createDomainAllow(admin, needDomain(), deps.actor ?? null);
      out(`${allow.domain} allowed, id ${allow.id}`);
      return;
    }
    case 'disallow': {
      const domain = needDomain();
      const allow = await findDomainAllowByDomain(deps.db, domain);
      if (!allow) throw new Error(`${domain} is not on the allow list`);
      await deleteDomainAllow(admin, allow.id, deps.actor ?? null);
      out(`${domain} is no longer allowed`);
      return;
    }
    case 'list': {
      // Newest first, a page at a time.
      for (let maxId: string | undefined; ;) {
        const page = await domainBlocksPage(deps.db, { maxId, limit: 200 });
        for (const b of page) out(describe(b));
        if (page.length < 200) break;
        maxId = page.at(-1)!.id;
      }
      for (let maxId: string | undefined; ;) {
        const page = await domainAllowsPage(deps.db, { maxId, limit: 200 });
        for (const a of page) out(`${'allow'.padEnd(8)}  ${a.domain}`);
        if (page.length < 200) break;
        maxId = page.at(-1)!.id;
      }
      return;
    }
    default:
      throw new DomainsUsageError(command ? `unknown command: domains ${command}` : 'domains takes a command');
  }
}
