import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { PictureProcess } from '../../services/picture-process.ts';
import { renderImage, Undecodable } from '../../services/image-rendering.ts';
import { idleSchedulingWorks, machineWrappers } from '../../services/media-tools.ts';

// Background copies' pictures are rendered in a child process at the lowest CPU priority: the same result as in
// this process, failures told as they would be here, and a child that goes when idle.
describe('the picture process', () => {
  const childOf = (p: PictureProcess) => (p as unknown as { child: { pid: number; exitCode: number | null } | null }).child;

  it('renders a picture as this process would, at nice 19, and tells an unreadable file as Undecodable', async () => {
    const pictures = new PictureProcess();
    try {
      const photo = await sharp({ create: { width: 120, height: 90, channels: 3, background: { r: 10, g: 120, b: 200 } } }).jpeg().toBuffer();
      const [there, here] = await Promise.all([pictures.render(photo), renderImage(photo)]);
      expect(Buffer.isBuffer(there.original.data) && Buffer.isBuffer(there.small.data)).toBe(true);
      expect(there).toEqual(here);
      // The nice value is the 19th field of /proc/<pid>/stat, the scheduling policy the 41st (5: SCHED_IDLE), where
      // chrt may set it here; counted after the name in parentheses, the 17th and the 39th.
      const stat = readFileSync(`/proc/${childOf(pictures)!.pid}/stat`, 'utf8').split(') ').at(-1)!.split(' ');
      expect(Number(stat[16])).toBe(19);
      const { chrt } = machineWrappers();
      if (chrt && (await idleSchedulingWorks(chrt))) expect(Number(stat[38])).toBe(5);
      await expect(pictures.render(Buffer.from('not a picture at all'))).rejects.toBeInstanceOf(Undecodable);
      // Still there for the next one.
      expect((await pictures.render(photo)).blurhash).toBe(here.blurhash);
    } finally {
      pictures.close();
    }
  });

  it('fails what it had when the child ends, and starts another for the next picture', async () => {
    const pictures = new PictureProcess();
    try {
      const photo = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 0, g: 0, b: 0 } } }).png().toBuffer();
      await pictures.render(photo);
      const first = childOf(pictures)!;
      const out = pictures.render(photo);
      process.kill(first.pid, 'SIGKILL');
      await out.then(() => {}, (err: Error) => expect(err.message).toMatch(/picture process/));
      expect((await pictures.render(photo)).small.width).toBe(64);
      expect(childOf(pictures)!.pid).not.toBe(first.pid);
    } finally {
      pictures.close();
    }
  });
});
