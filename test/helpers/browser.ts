import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';
import { createRequire } from 'node:module';
import { mkdtemp, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { requireProgram } from './programs.ts';

/** Debian's chromium (README.md's prerequisites); CHROMIUM_PATH points elsewhere. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * A headless Chromium as the machine's set-up runs it: no sandbox (tests run as root), no background networking
 * (this machine's network is closed; Chromium would otherwise keep trying Google's hosts).
 */
function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: requireProgram(CHROMIUM, 'chromium', 'chromium'),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

/** A test file's browser: contexts of its own in the worker's Chromium. */
export interface TestBrowser {
  newContext(options?: BrowserContextOptions): Promise<BrowserContext>;
  /** Closes the contexts this file opened; the Chromium stays for the worker's next file. */
  close(): Promise<void>;
}

/**
 * The worker process's Chromium, launched by its first file that asks and shared by the next (the browser and main
 * groups keep their workers from one file to the next: isolate is off, vitest.config.ts). Kept on globalThis, which
 * outlives a file's modules where they are imported again; Playwright ends it with the process.
 */
const WORKER_CHROMIUM = Symbol.for('fedi.test.chromium');
type WithChromium = typeof globalThis & { [WORKER_CHROMIUM]?: Promise<Browser> };

async function workerChromium(): Promise<Browser> {
  const g = globalThis as WithChromium;
  const running = await g[WORKER_CHROMIUM]?.catch(() => null);
  if (running?.isConnected()) return running;
  const launched = launchChromium();
  g[WORKER_CHROMIUM] = launched;
  return launched;
}

/**
 * A browser for a test file: its contexts are its own, in the worker's one Chromium (a launch took one to two
 * seconds of a busy machine per file). Each file closes its contexts when done, as it closed its browser before.
 */
export async function testBrowser(): Promise<TestBrowser> {
  const browser = await workerChromium();
  const contexts = new Set<BrowserContext>();
  return {
    async newContext(options) {
      const context = await browser.newContext(options);
      contexts.add(context);
      context.once('close', () => contexts.delete(context));
      return context;
    },
    async close() {
      await Promise.all([...contexts].map((c) => c.close()));
    },
  };
}

/**
 * Where a test's screenshots go when SCREENSHOTS=1: a folder under the system's temp folder, printed once so a
 * person can look. Without it none are taken (full-page PNGs were a sixth of the page walks' time, for nobody to see).
 */
export async function artifactsDir(name: string): Promise<string> {
  if (!process.env.SCREENSHOTS) return '';
  const dir = await mkdtemp(join(tmpdir(), `fedi-${name}-`));
  await mkdir(dir, { recursive: true });
  console.log(`screenshots of ${name}: ${dir}`);
  return dir;
}

/** Saves a full-page screenshot as `<label>.png` in `dir` (none when screenshots are off: no `dir`). */
export async function screenshot(page: Page, dir: string, label: string): Promise<void> {
  if (dir === '') return;
  await page.screenshot({ path: join(dir, `${label.replace(/[^\w-]+/g, '-')}.png`), fullPage: true });
}

type Violations = Awaited<ReturnType<AxeBuilder['analyze']>>['violations'];

/** axe itself, as @axe-core/playwright has it (the same copy its AxeBuilder puts in pages). */
const axeSource: string = createRequire(createRequire(import.meta.url).resolve('@axe-core/playwright'))('axe-core').source;

/**
 * axe.run in the page, without the rules whose impact is fixed at minor or moderate: axe gives every result of such a
 * rule the rule's impact, so they can never fail expectAccessible. axe is put in a document once, however many
 * times it is checked (in another colour scheme, say).
 */
const RUN_AXE = `(async () => {
  const low = window.axe._audit.rules.filter((r) => r.impact === 'minor' || r.impact === 'moderate').map((r) => r.id);
  const rules = Object.fromEntries(low.map((id) => [id, { enabled: false }]));
  return (await window.axe.run(document, { resultTypes: ['violations'], rules })).violations;
})()`;

/**
 * Runs axe on the page as it is (a page of `browser.newContext()`, as axe needs); fails on any serious or critical
 * violation, naming them. A page without frames (all of ours) is checked by axe.run in the page itself: the same rules
 * on the same document as AxeBuilder's default way, which loads axe into the page twice and again into a blank page
 * it opens to put the frames' results together. Only violations are gathered in full (axe's resultTypes). A check
 * takes about a third of the time it did.
 */
export async function expectAccessible(page: Page, label: string): Promise<void> {
  let violations: Violations;
  if (page.frames().length === 1) {
    if (!(await page.evaluate<boolean>('typeof window.axe === "object"'))) await page.evaluate(axeSource);
    violations = await page.evaluate<Violations>(RUN_AXE);
  } else {
    violations = (await new AxeBuilder({ page }).analyze()).violations;
  }
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`), `${label}: ${page.url()}`).toEqual([]);
}
