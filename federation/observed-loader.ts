import type { DocumentLoader } from '@fedify/vocab-runtime';
import type { AppContext } from '../context.ts';
import { healthOf } from './health.ts';
import { answerExcerpt, fetchProblem } from './fetch-errors.ts';

/**
 * A document loader that remembers why a fetch failed (status and the start of the answer, by URL), so that the
 * code that gives up on a document can say why, and the servers table shows what the server answered. Counting is
 * done by Fedify's instruments (federation/meter.ts); this only adds the details.
 */
export function observedLoader(app: AppContext, loader: DocumentLoader): DocumentLoader {
  return async (url, options) => {
    try {
      const document = await loader(url, options);
      healthOf(app).fetchSucceededAt(url);
      return document;
    } catch (err) {
      const problem = fetchProblem(err);
      const body = await answerExcerpt(err);
      healthOf(app).fetchFailedAt({ url, status: problem.status, detail: body ? `${problem.detail}: ${body}` : problem.detail });
      throw err;
    }
  };
}
