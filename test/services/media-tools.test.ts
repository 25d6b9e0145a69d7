import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.ts';
import { findExecutable, missingToolsNotice, runTool, ToolFailed } from '../../services/media-tools.ts';
import { requireProgram } from '../helpers/programs.ts';

// The media programs' runner: a hang is killed at its time limit, a crash and a memory limit hit are failures, and a
// missing program is said once at start.
const limits = { timeoutMs: 5000, memoryBytes: 1024 * 1024 * 1024, fileBytes: 1024 * 1024 };
const sh = findExecutable('sh')!;

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
