import type { StreamView } from '../services/stream-events.ts';

/** How long a batch's messages wait for their view to be rendered before going without it. */
export const VIEW_WAIT_MS = 100;

/**
 * The view a new status's messages carry (StreamMessage), batch after batch: rendered once, checked before each later
 * batch (a job for a large audience takes seconds, in which the status may be favourited, boosted or edited) and
 * rendered again when something it shows has changed. A batch whose view is not ready within VIEW_WAIT_MS goes
 * without one: receivers' processes then read the status themselves, as they do for every other message.
 */
export class BatchViews {
  private latest: StreamView | null = null;
  /** Whether `latest` has not been sent yet: rendered for the batch that asks next, it needs no check. */
  private fresh = false;
  private rendering: Promise<void> | null = null;
  private readonly render: () => Promise<StreamView | null>;

  constructor(render: () => Promise<StreamView | null>) {
    this.render = render;
    this.start();
  }

  private start(): void {
    const rendering = this.render().catch(() => null).then((view) => {
      this.latest = view;
      this.fresh = true;
      this.rendering = null;
    });
    this.rendering = rendering;
  }

  async forBatch(): Promise<string | undefined> {
    if (!this.rendering && this.latest && !this.fresh) {
      const current = await this.latest.stillCurrent().catch(() => false);
      if (!current) {
        this.latest = null;
        this.start();
      }
    }
    if (this.rendering) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), VIEW_WAIT_MS)));
      const rendered = await Promise.race([this.rendering.then(() => true), late]);
      clearTimeout(timer);
      if (!rendered) return undefined;
    }
    this.fresh = false;
    return this.latest?.json;
  }
}
