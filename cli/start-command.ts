// How `npm start` runs the server: its environment variables and Node's flags, read from package.json's start script,
// the one place they are written, so that what starts the server otherwise (cli/local-cluster.ts, the benchmarks' bench/common.ts)
// runs it the same way.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface StartCommand {
  /** Variables set before `node` (`NAME=value`). */
  env: Record<string, string>;
  /** Node's flags. */
  nodeFlags: string[];
  /** What node runs (`main.ts`). */
  script: string;
}

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * Reads `NAME=value … node --flag … script` (what the start script is). Anything else (quoting, `&&`, another
 * program) is refused rather than half-read, so a start script written otherwise fails here, not by running the
 * server with other flags.
 */
export function parseStartScript(script: string): StartCommand {
  const words = script.trim().split(/\s+/);
  const env: Record<string, string> = {};
  let i = 0;
  for (; i < words.length && /^[A-Z_][A-Z0-9_]*=/.test(words[i]!); i++) {
    const word = words[i]!;
    env[word.slice(0, word.indexOf('='))] = word.slice(word.indexOf('=') + 1);
  }
  if (words[i] !== 'node') throw new Error(`the start script does not run node: ${script}`);
  const args = words.slice(i + 1);
  if (args.length === 0 || args.some((a) => /["'`$&|;<>()\\]/.test(a)) || args.at(-1)!.startsWith('-')) {
    throw new Error(`the start script is not \`NAME=value … node --flag … script\`: ${script}`);
  }
  return { env, nodeFlags: args.slice(0, -1), script: args.at(-1)! };
}

/** `npm start`'s command; its relative paths (the compile cache, the script) are relative to the project's root. */
export function startCommand(): StartCommand & { cwd: string } {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } };
  return { ...parseStartScript(pkg.scripts.start), cwd: root };
}
