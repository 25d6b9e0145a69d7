import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Config } from '../config.ts';

/**
 * The machine's media programs (as Mastodon uses its ffmpeg and ffprobe), run as child processes: a time limit
 * (killed when it passes), an address-space and file-size limit (`prlimit`, util-linux), a low priority, and capped
 * output, so that a file that makes one hang, crash or balloon fails that upload and nothing else. Reading a file
 * (probes, a preview frame, streams copied) runs at `nice -n 10`; encoding, which takes a core for as long as the
 * file lasts, at idle priority (`chrt --idle 0`, util-linux, and `nice -n 19`): it gets a core only when nothing
 * else wants it, so posting and reading keep both cores of a small machine while videos transcode.
 */

export type ToolConfig = Pick<Config, 'ffmpegPath' | 'ffprobePath' | 'heifConvertPath' | 'mediaTranscodeTimeoutMs' | 'mediaTranscodeMemoryBytes' | 'maxVideoBytes'>;

const found = new Map<string, string | null>();

/** A program's path: as given when it names a path, else the first executable of that name on the PATH; null if none. */
export function findExecutable(name: string): string | null {
  const known = found.get(name);
  if (known !== undefined) return known;
  const candidates = name.includes('/') ? [name] : (process.env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, name));
  let path: string | null = null;
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      path = candidate;
      break;
    } catch {
      // not here
    }
  }
  found.set(name, path);
  return path;
}

export interface MediaTools {
  ffmpeg: string | null;
  ffprobe: string | null;
  heifConvert: string | null;
}

export function mediaTools(config: ToolConfig): MediaTools {
  return { ffmpeg: findExecutable(config.ffmpegPath), ffprobe: findExecutable(config.ffprobePath), heifConvert: findExecutable(config.heifConvertPath) };
}

/** The one start-up line about missing programs, or null when all are there. */
export function missingToolsNotice(config: ToolConfig): string | null {
  const tools = mediaTools(config);
  const missing: string[] = [];
  if (!tools.ffmpeg || !tools.ffprobe) missing.push(`ffmpeg/ffprobe (${[!tools.ffmpeg && config.ffmpegPath, !tools.ffprobe && config.ffprobePath].filter(Boolean).join(', ')}): video, audio and animated GIF uploads are refused`);
  if (!tools.heifConvert) missing.push(`heif-convert (${config.heifConvertPath}): HEIC photos are refused`);
  if (missing.length === 0) return null;
  return `media programs not found: ${missing.join('; ')}. Install Debian's ffmpeg and libheif-examples, or set FFMPEG_PATH, FFPROBE_PATH, HEIF_CONVERT_PATH`;
}

/** Why a run failed: it was killed at its time limit, died of a signal (a crash, or a limit hit), or exited non-zero. */
export class ToolFailed extends Error {
  readonly reason: 'timeout' | 'signal' | 'exit' | 'spawn';
  constructor(message: string, reason: ToolFailed['reason']) {
    super(message);
    this.reason = reason;
  }
}

/**
 * How much a run may take from the rest of the machine: `low` (`nice -n 10`) for reading files and copying streams,
 * `idle` (SCHED_IDLE through `chrt --idle 0`, and `nice -n 19`) for encoding. Where chrt is missing or the
 * scheduling policy is refused (a container without the capability, a sandbox), `idle` is `nice -n 19` alone.
 */
export type Priority = 'low' | 'idle';

/** The programs a run is wrapped in, each exec'ing the next: those on the PATH (null where missing). */
export interface Wrappers {
  prlimit: string | null;
  chrt: string | null;
  nice: string | null;
}

export function machineWrappers(): Wrappers {
  return { prlimit: findExecutable('prlimit'), chrt: findExecutable('chrt'), nice: findExecutable('nice') };
}

const idleChecked = new Map<string, Promise<boolean>>();

/**
 * Whether this chrt may put a program in the idle scheduling class here: tried once per process (chrt running its
 * own `--max` under `--idle 0`), as a refusal would otherwise fail every encode before it starts.
 */
export function idleSchedulingWorks(chrt: string): Promise<boolean> {
  let known = idleChecked.get(chrt);
  if (!known) {
    known = new Promise<boolean>((resolve) => {
      const child = spawn(chrt, ['--idle', '0', chrt, '--max'], { stdio: 'ignore', env: { PATH: process.env.PATH ?? '', LANG: 'C' } });
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      timer.unref();
      child.on('error', () => {
        clearTimeout(timer);
        resolve(false);
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve(code === 0);
      });
    });
    idleChecked.set(chrt, known);
  }
  return known;
}

/** The command line of a run: the wrappers its priority asks for (those that can be had), then the program. */
export async function toolCommand(program: string, args: string[], o: Pick<RunOptions, 'memoryBytes' | 'fileBytes' | 'priority' | 'wrappers'>): Promise<string[]> {
  const w = o.wrappers ?? machineWrappers();
  const idle = (o.priority ?? 'low') === 'idle';
  const chrt = idle && w.chrt && (await idleSchedulingWorks(w.chrt)) ? w.chrt : null;
  // Each wrapper execs the next, so the child's pid is the program's own and a kill at the time limit reaches it.
  return [
    ...(w.prlimit ? [w.prlimit, `--as=${o.memoryBytes}`, `--fsize=${o.fileBytes}`, '--'] : []),
    ...(chrt ? [chrt, '--idle', '0'] : []),
    ...(w.nice ? [w.nice, '-n', idle ? '19' : '10'] : []),
    program, ...args,
  ];
}

export interface RunOptions {
  timeoutMs: number;
  /** Address space, bytes (prlimit --as). */
  memoryBytes: number;
  /** Largest file the program may write, bytes (prlimit --fsize). */
  fileBytes: number;
  /** Standard output kept (more fails the run). */
  maxStdout?: number;
  stdin?: Readable;
  cwd?: string;
  /** `low` unless said. */
  priority?: Priority;
  /** The machine's (machineWrappers) unless said. */
  wrappers?: Wrappers;
}

const STDERR_KEPT = 2000;

/** Runs `program args…` under the limits; resolves with its standard output, rejects with ToolFailed. */
export async function runTool(program: string, args: string[], o: RunOptions): Promise<Buffer> {
  const command = await toolCommand(program, args, o);
  const maxStdout = o.maxStdout ?? 8 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), { cwd: o.cwd, stdio: [o.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', LANG: 'C' } });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let failure: ToolFailed | null = null;
    const stop = (f: ToolFailed) => {
      failure ??= f;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop(new ToolFailed(`took longer than ${Math.round(o.timeoutMs / 1000)} s`, 'timeout')), o.timeoutMs);
    child.stdout!.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxStdout) return stop(new ToolFailed('wrote more output than expected', 'exit'));
      out.push(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      if (err.length < STDERR_KEPT) err += chunk.toString('utf8').slice(0, STDERR_KEPT - err.length);
    });
    if (o.stdin && child.stdin) {
      child.stdin.on('error', () => {}); // the program stopped reading (it failed or finished): its exit says which
      o.stdin.on('error', (e) => stop(new ToolFailed(`its input could not be read: ${e.message}`, 'exit')));
      o.stdin.pipe(child.stdin);
    }
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new ToolFailed(`could not be started: ${e.message}`, 'spawn'));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (failure) return reject(failure);
      if (signal) return reject(new ToolFailed(`was stopped by ${signal}${err ? `: ${lastLine(err)}` : ''}`, 'signal'));
      if (code !== 0) return reject(new ToolFailed(`exited with ${code}${err ? `: ${lastLine(err)}` : ''}`, 'exit'));
      resolve(Buffer.concat(out));
    });
  });
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n').map((l) => l.trim()).filter(Boolean);
  return (lines[lines.length - 1] ?? '').slice(0, 300);
}
