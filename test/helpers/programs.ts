// Programs of the machine that some tests drive (Chromium, PgBouncer, ffmpeg…). A test whose program is missing
// fails at once with one line naming the Debian package to install: never skipped, so a green run means every test ran.
import { existsSync } from 'node:fs';

/** The program's path, or an error naming the package (README.md's prerequisites line installs them all). */
export function requireProgram(path: string | null, program: string, debianPackage: string): string {
  if (path !== null && existsSync(path)) return path;
  throw new Error(`${program} is not installed${path ? ` at ${path}` : ''}: apt-get install -y ${debianPackage} (see README.md, Prerequisites)`);
}
