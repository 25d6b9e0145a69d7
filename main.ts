// Starts the server: `npm start`. Settings come from the environment (docs/configuration.md).
import cluster from 'node:cluster';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { startServer } from './server.ts';
import { unavailableDependency } from './storage/dependencies.ts';
import { MAIL_OFF_NOTICE } from './services/mail.ts';
import { missingToolsNotice } from './services/media-tools.ts';
import { anyOperator } from './storage/users.ts';

async function main() {
  const config = loadConfig();
  if (config.role === 'streaming' && config.streamingProcesses > 1 && cluster.isPrimary) return superviseStreaming(config);
  const server = await startServer(config);
  if (!config.smtp) server.app.log.warn(MAIL_OFF_NOTICE);
  const toolsNotice = config.role === 'streaming' ? null : missingToolsNotice(config);
  if (toolsNotice) server.app.log.warn(toolsNotice);
  if (config.role !== 'worker') {
    server.app.log.info(`Answering at ${config.publicUrl}/ (listening on ${config.bind}:${config.port})`);
    // A fresh install has nobody to approve sign-ups or handle reports: say how to make the first operator.
    // A notice only: PostgreSQL slow to answer at this moment (its probe timed out) must not end a started server.
    const hasOperator = await anyOperator(server.ctx.db).catch((err: unknown) => (unavailableDependency(err) ? true : Promise.reject(err)));
    if (!hasOperator) {
      server.app.log.warn('No operator yet: make one with `npm run cli -- accounts create <username> --email <address> --admin` (it prints the password), then sign in at ' + `${config.publicUrl}/auth/sign_in`);
    }
  }
  // A promise nobody waited on, failing because PostgreSQL or Redis went away, must not end a server that comes
  // back by itself (the outage is logged once, by storage/dependencies.ts); anything else still ends it, as Node would.
  process.on('unhandledRejection', (err) => {
    if (unavailableDependency(err)) return;
    throw err;
  });
  const shutdown = async (signal: string) => {
    server.app.log.info({ signal }, 'shutting down');
    await server.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

/**
 * STREAMING_PROCESSES > 1 with ROLE=streaming: this process only starts that many streaming processes on the same
 * port (node:cluster hands each new connection to one of them), starts another if one dies, and stops them all.
 */
function superviseStreaming(config: Config): void {
  let stopping = false;
  for (let i = 0; i < config.streamingProcesses; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    console.error(`streaming process ${worker.process.pid} ended (${signal ?? code}); starting another`);
    setTimeout(() => cluster.fork(), 1000);
  });
  const shutdown = () => {
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
    let left = workers.length;
    if (left === 0) process.exit(0);
    for (const w of workers) {
      w.once('exit', () => { if (--left === 0) process.exit(0); });
      w.process.kill('SIGTERM');
    }
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((err: unknown) => {
  // A bad setting is one clear line naming it, not a stack trace.
  if (err instanceof ConfigError) {
    console.error(`Cannot start: ${err.message}`);
  } else {
    console.error('Cannot start:', err);
  }
  process.exit(1);
});
