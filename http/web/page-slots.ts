// A signed-in page is rendered with marks where each response puts values of its own (the forms' CSRF token, the
// page to come back to, the compose form's idempotency key), kept as bytes with those places left open, and filled
// in per response: what was rendered can be sent again to the same person without rendering it again.
import { escapeForTemplates } from './views.ts';

/** The values a response fills in. */
export type SlotName = 'csrf' | 'returnTo' | 'idempotencyKey';

const NAMES: readonly SlotName[] = ['csrf', 'returnTo', 'idempotencyKey'];

/**
 * What a template is given in place of each value: a NUL, the slot's number, a NUL. Escaping leaves them as they are,
 * and no text a page shows can hold a NUL (PostgreSQL's text refuses it, and so does what we take in: text/storable.ts).
 */
export const SLOT: Readonly<Record<SlotName, string>> = Object.fromEntries(NAMES.map((name, i) => [name, `\u0000${i}\u0000`])) as Record<SlotName, string>;

/** A rendered page: bytes with places left open, `slots[i]` between `chunks[i]` and `chunks[i + 1]`. */
export class SlottedPage {
  readonly chunks: Buffer[];
  readonly slots: SlotName[];
  /** Bytes kept (what a cache counts). */
  readonly length: number;

  constructor(html: string) {
    const bytes = Buffer.from(html);
    this.chunks = [];
    this.slots = [];
    let from = 0;
    for (let at = bytes.indexOf(0); at !== -1; at = bytes.indexOf(0, at + 1)) {
      // UTF-8 never has a zero byte within a character: every zero is a mark's.
      const slot = NAMES[bytes[at + 1]! - 0x30];
      if (slot === undefined || bytes[at + 2] !== 0) continue;
      this.chunks.push(bytes.subarray(from, at));
      this.slots.push(slot);
      from = at + 3;
      at += 2;
    }
    this.chunks.push(bytes.subarray(from));
    this.length = bytes.length;
  }

  /** The page for one response: each place filled with its value, escaped as the templates escape values. */
  fill(values: Record<SlotName, string>): Buffer {
    if (this.slots.length === 0) return this.chunks[0]!;
    const escaped = new Map<SlotName, Buffer>();
    const parts: Buffer[] = [this.chunks[0]!];
    let length = this.chunks[0]!.length;
    for (let i = 0; i < this.slots.length; i++) {
      const name = this.slots[i]!;
      let value = escaped.get(name);
      if (!value) escaped.set(name, (value = Buffer.from(escapeForTemplates(values[name]))));
      parts.push(value, this.chunks[i + 1]!);
      length += value.length + this.chunks[i + 1]!.length;
    }
    return Buffer.concat(parts, length);
  }
}
