// README.md's prerequisites line and .ci/run install the same Debian packages (.ci/run itself runs where npm does,
// so it leaves out nodejs and npm), and every program the tests ask for by package is in both.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

function readmePackages(): string[] {
  const line = read('README.md').split('\n').find((l) => l.startsWith('sudo apt-get install -y '));
  expect(line, "README.md's prerequisites line").toBeDefined();
  return line!.replace('sudo apt-get install -y ', '').trim().split(/\s+/);
}

function ciPackages(): string[] {
  const m = /^PACKAGES=\(([^)]*)\)/m.exec(read('.ci/run'));
  expect(m, '.ci/run PACKAGES').not.toBeNull();
  return m![1]!.trim().split(/\s+/);
}

describe('the machine the tests need', () => {
  it('is the same in README.md and .ci/run', () => {
    expect(readmePackages().filter((p) => p !== 'nodejs' && p !== 'npm').sort()).toEqual(ciPackages().sort());
  });

  it('includes every package a test names when its program is missing', () => {
    const files = readdirSync(new URL('test/', root), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    // requireProgram(path, program, debianPackage): the package is the call's last quoted argument.
    const named = files.flatMap((f) => [...read(`test/${f}`).matchAll(/requireProgram\((.*)\)/g)].map((m) => [...m[1]!.matchAll(/'([^']+)'/g)].at(-1)?.[1]).filter((p) => p !== undefined));
    expect(named).toEqual(expect.arrayContaining(['chromium', 'pgbouncer', 'ffmpeg', 'libheif-examples']));
    for (const pkg of named) expect(ciPackages(), `${pkg}, named by a test`).toContain(pkg);
  });
});
