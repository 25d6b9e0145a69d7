import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../config.ts';
import { findExecutable, machineWrappers, missingToolsNotice, runTool, toolCommand, ToolFailed } from '../../services/media-tools.ts';
import { processAudio, processVideo } from '../../services/media-av.ts';
import { requireProgram } from '../helpers/programs.ts';

// The media programs' runner: a hang is killed at its time limit, a crash and a memory limit hit are failures, and a
// missing program is said once at start. Encoding runs at idle priority on one thread, read from the running
// program itself (/proc), and where chrt is missing or refused at `nice -n 19` alone.
const limits = { timeoutMs: 5000, memoryBytes: 1024 * 1024 * 1024, fileBytes: 1024 * 1024 };
const sh = findExecutable('sh')!;
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'media-tools-test-'));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** This process's scheduling policy (0 normal, 5 SCHED_IDLE), as /proc/<pid>/sched tells it. */
const policyOf = (sched: string) => Number(/^policy\s*:\s*(\d+)/m.exec(sched)?.[1]);
const ownPolicy = () => policyOf(readFileSync('/proc/self/sched', 'utf8'));
/** What a running program says of itself: its scheduling policy and its niceness. */
const SELF_REPORT = 'grep "^policy" /proc/$$/sched; cut -d" " -f19 /proc/$$/stat';
const report = (out: Buffer) => {
  const [policy, nice] = out.toString().trim().split('\n');
  return { policy: policyOf(policy!), nice: Number(nice) };
};

describe('runTool', () => {
  it('returns what the program wrote', async () => {
    expect((await runTool(sh, ['-c', 'echo hello'], limits)).toString()).toBe('hello\n');
  });

  it('kills a program that passes its time limit', async () => {
    const started = Date.now();
    const err = await runTool(sh, ['-c', 'exec sleep 30'], { ...limits, timeoutMs: 300 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolFailed);
    expect(err).toMatchObject({ reason: 'timeout' });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('tells a crash and a failing exit apart, with the last line of what it said', async () => {
    await expect(runTool(sh, ['-c', 'kill -SEGV $$'], limits)).rejects.toMatchObject({ reason: 'signal', message: expect.stringMatching(/SIGSEGV/) });
    await expect(runTool(sh, ['-c', 'echo "Invalid data found" >&2; exit 1'], limits)).rejects.toMatchObject({ reason: 'exit', message: expect.stringMatching(/exited with 1: Invalid data found/) });
  });

  it('holds ffmpeg to its address-space limit', async () => {
    requireProgram(findExecutable('prlimit'), 'prlimit', 'util-linux');
    requireProgram(findExecutable('ffmpeg'), 'ffmpeg', 'ffmpeg');
    const args = ['-nostdin', '-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=1920x1080:duration=0.1', '-c:v', 'libx264', '-f', 'null', '-'];
    await expect(runTool(findExecutable('ffmpeg')!, args, { ...limits, timeoutMs: 30_000, memoryBytes: 256 * 1024 * 1024 })).rejects.toBeInstanceOf(ToolFailed);
  });

  it('stops a program that writes more than it may', async () => {
    await expect(runTool(sh, ['-c', 'head -c 100000 /dev/zero'], { ...limits, maxStdout: 1000 })).rejects.toMatchObject({ message: expect.stringMatching(/more output/) });
  });
});

describe('priority', () => {
  it('runs reading at nice 10 and encoding in the idle scheduling class at nice 19, the program itself', async () => {
    requireProgram(findExecutable('chrt'), 'chrt', 'util-linux');
    expect(report(await runTool(sh, ['-c', SELF_REPORT], limits))).toEqual({ policy: ownPolicy(), nice: Math.min(19, getPriority() + 10) });
    expect(report(await runTool(sh, ['-c', SELF_REPORT], { ...limits, priority: 'idle' }))).toEqual({ policy: 5, nice: 19 });
  });

  it('still kills the program itself at its time limit through every wrapper', async () => {
    const pidFile = join(dir, 'sleeper.pid');
    const err = await runTool(sh, ['-c', `echo $$ > ${pidFile}; exec sleep 30`], { ...limits, timeoutMs: 500, priority: 'idle' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ reason: 'timeout' });
    const pid = readFileSync(pidFile, 'utf8').trim();
    expect(existsSync(`/proc/${pid}`)).toBe(false);
  });

  it('falls back to nice 19 alone where chrt is missing or refused, asking a refusing chrt once', async () => {
    const calls = join(dir, 'chrt-calls');
    const refusing = join(dir, 'chrt-refusing');
    // What chrt says where the kernel or a sandbox refuses SCHED_IDLE.
    writeFileSync(refusing, `#!/bin/sh\necho x >> ${calls}\necho "chrt: failed to set pid 0's policy: Operation not permitted" >&2\nexit 1\n`);
    chmodSync(refusing, 0o755);
    for (const chrt of [refusing, null]) {
      const wrappers = { ...machineWrappers(), chrt };
      for (let i = 0; i < 2; i++) expect(report(await runTool(sh, ['-c', SELF_REPORT], { ...limits, priority: 'idle', wrappers }))).toEqual({ policy: ownPolicy(), nice: 19 });
      expect(await toolCommand(sh, [], { ...limits, priority: 'idle', wrappers })).not.toContain(refusing);
    }
    expect(readFileSync(calls, 'utf8')).toBe('x\n');
  });

  it('runs ffmpeg encodes on one thread at idle priority, and stream copies and probes at nice 10', async () => {
    const real = requireProgram(findExecutable('ffmpeg'), 'ffmpeg', 'ffmpeg');
    requireProgram(findExecutable('chrt'), 'chrt', 'util-linux');
    // ffmpeg as the server runs it, through a script that notes what it was run as (from /proc) and execs the real one.
    const log = join(dir, 'ffmpeg-runs');
    const recorder = join(dir, 'ffmpeg-recorder');
    writeFileSync(recorder, `#!/bin/sh\n{ ${SELF_REPORT}; printf '%s\\n' "$@"; echo ---; } >> ${log}\nexec ${real} "$@"\n`);
    chmodSync(recorder, 0o755);
    const config = loadConfig({ LOCAL_DOMAIN: 'example.test', FFMPEG_PATH: recorder });
    const make = (name: string, args: string[]) => {
      execFileSync(real, ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', ...args, join(dir, name)]);
      return readFileSync(join(dir, name));
    };
    const testsrc = ['-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10:duration=1'];
    const sine = ['-f', 'lavfi', '-i', 'sine=frequency=440:duration=1'];
    const runs = () => readFileSync(log, 'utf8').split('---\n').filter(Boolean).map((run) => {
      const [policy, nice, ...argv] = run.trim().split('\n');
      return { policy: policyOf(policy!), nice: Number(nice), argv };
    });
    const after = (argv: string[], option: string, value: string) => argv.some((a, i) => a === option && argv[i + 1] === value);

    // VP9 in WebM: transcoded.
    const transcoded = await processVideo(config, make('vp9.webm', [...testsrc, '-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8']), 'video/webm');
    const [encode] = runs();
    expect(encode).toMatchObject({ policy: 5, nice: 19 });
    const input = encode!.argv.indexOf('-i');
    // One thread for the filters and the decoder (before the input), and for the encoder, x264's own count too.
    expect(after(encode!.argv.slice(0, input), '-filter_threads', '1')).toBe(true);
    expect(after(encode!.argv.slice(0, input), '-threads', '1')).toBe(true);
    const encoder = encode!.argv.slice(encode!.argv.indexOf('libx264'), encode!.argv.indexOf('mp4'));
    expect(after(encoder, '-threads', '1')).toBe(true);
    expect(after(encode!.argv, '-x264-params', 'threads=1')).toBe(true);
    // x264 writes the options it ran with into the stream: one thread, no lookahead threads of its own.
    expect(transcoded.original.data.includes('threads=1 lookahead_threads=1')).toBe(true);

    // H.264 in MP4: its streams copied, at the priority of a read.
    rmSync(log);
    await processVideo(config, make('h264.mp4', [...testsrc, '-c:v', 'libx264', '-pix_fmt', 'yuv420p']), 'video/mp4');
    expect(runs()).toEqual([expect.objectContaining({ policy: ownPolicy(), nice: Math.min(19, getPriority() + 10) })]);

    // Audio made MP3: an encode.
    rmSync(log);
    await processAudio(config, make('tone.wav', sine));
    expect(runs()).toEqual([expect.objectContaining({ policy: 5, nice: 19 })]);
  });
});

describe('missing programs', () => {
  it('are named in one start-up line, and nothing is said when all are there', () => {
    const config = loadConfig({ LOCAL_DOMAIN: 'example.test', FFMPEG_PATH: '/nonexistent/ffmpeg', HEIF_CONVERT_PATH: 'no-such-heif-convert' });
    const notice = missingToolsNotice(config);
    expect(notice).toMatch(/ffmpeg\/ffprobe \(\/nonexistent\/ffmpeg\): video, audio and animated GIF uploads are refused/);
    expect(notice).toMatch(/heif-convert \(no-such-heif-convert\)/);
    expect(notice!.split('\n')).toHaveLength(1);
    if (findExecutable('ffmpeg') && findExecutable('ffprobe') && findExecutable('heif-convert')) expect(missingToolsNotice(loadConfig({ LOCAL_DOMAIN: 'example.test' }))).toBeNull();
  });
});
