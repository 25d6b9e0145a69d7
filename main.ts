// Starts the server: `npm start`. Settings come from the environment (README.md).
import { ConfigError, loadConfig } from './config.ts';
import { startServer } from './server.ts';

async function main() {
  const config = loadConfig();
  const server = await startServer(config);
  const shutdown = async (signal: string) => {
    server.app.log.info({ signal }, 'shutting down');
    await server.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
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
