import type { FileHost } from '../../storage/filehost/index.ts';

/** What renderers need to know about this server to build absolute URLs. */
export interface RenderContext {
  publicUrl: string;
  localDomain: string;
  fileHost: FileHost;
}
