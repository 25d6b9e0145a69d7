// /about/api: the OpenAPI document of GET /api/openapi.json (http/openapi.ts) as a page to read: each operation
// with its parameters, body fields and answers, grouped by resource, and Mastodon's entities it names. Rendered on
// the server from the same document, so the page and the JSON never differ; no script (the site's CSP holds).
import type { FastifyInstance } from 'fastify';
import type { ApiDescription } from '../openapi.ts';
import type { RouteOptions } from '../route-options.ts';
import { renderView } from './views.ts';
import { headTags, publicChrome, viewerOf } from './page-chrome.ts';
import { HTML } from './page-serving.ts';
import { escapeHtml } from '../../text/render.ts';

type Schema = Record<string, unknown>;
interface Operation { parameters?: Array<{ name: string; in: string; required?: boolean; schema?: Schema }>; requestBody?: { content?: Record<string, { schema?: Schema }> }; responses?: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }> }
interface Document { info: { title: string; version: string; description?: string }; paths: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, Schema> } }

export interface FieldView { name: string; where: string; type: string; required: boolean }
/** `description`: HTML, escaped, with the document's `code` spans as <code>. */
export interface AnswerView { status: string; description: string; type: string; mediaType: string }
export interface OperationView { id: string; method: string; path: string; fields: FieldView[]; answers: AnswerView[] }
export interface GroupView { id: string; name: string; operations: OperationView[] }
export interface EntityView { id: string; name: string; description: string }

const entityName = (ref: string) => ref.replace(/^#\/components\/schemas\//, '');

/** A schema in a few words: `Status`, `[Account]`, `string ≤ 500`, `"home" | "notifications"`. */
export function typeOf(schema: Schema | undefined): string {
  if (!schema) return '';
  if (typeof schema.$ref === 'string') return entityName(schema.$ref);
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  if ('const' in schema) return JSON.stringify(schema.const);
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(schema[key])) return [...new Set((schema[key] as Schema[]).map(typeOf))].join(' | ');
  }
  const type = Array.isArray(schema.type) ? schema.type.join(' | ') : (schema.type as string | undefined) ?? 'any';
  if (type === 'array') return `[${typeOf(schema.items as Schema | undefined) || 'any'}]`;
  const bounds: string[] = [];
  if (typeof schema.minLength === 'number' && schema.minLength > 0) bounds.push(`≥ ${schema.minLength} characters`);
  if (typeof schema.maxLength === 'number') bounds.push(`≤ ${schema.maxLength} characters`);
  if (typeof schema.minimum === 'number') bounds.push(`≥ ${schema.minimum}`);
  if (typeof schema.maximum === 'number') bounds.push(`≤ ${schema.maximum}`);
  if (typeof schema.format === 'string') bounds.push(schema.format);
  return bounds.length > 0 ? `${type} (${bounds.join(', ')})` : type;
}

/** A description's text as HTML: escaped, its backquoted spans (CommonMark code, as OpenAPI reads them) as <code>. */
export const descriptionHtml = (text: string) => escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');

const anchor = (text: string) => text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');

/** The resource an operation belongs to: `/api/v1/accounts/{id}/follow` → `/api/v1/accounts`. */
function groupOf(path: string): string {
  const parts = path.split('/').filter(Boolean);
  const version = parts[0] === 'api' ? 2 : 1;
  return `/${parts.slice(0, version + 1).join('/')}`;
}

export function apiPageView(doc: Document): { groups: GroupView[]; entities: EntityView[] } {
  const groups = new Map<string, GroupView>();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const name = groupOf(path);
      let group = groups.get(name);
      if (!group) groups.set(name, (group = { id: `group-${anchor(name)}`, name, operations: [] }));
      const fields: FieldView[] = (op.parameters ?? []).map((p) => ({ name: p.name, where: p.in, type: typeOf(p.schema), required: !!p.required }));
      for (const [mediaType, content] of Object.entries(op.requestBody?.content ?? {}).slice(0, 1)) {
        const body = content.schema ?? {};
        const required = new Set((body.required as string[] | undefined) ?? []);
        for (const [field, schema] of Object.entries((body.properties as Record<string, Schema> | undefined) ?? {})) {
          fields.push({ name: field, where: mediaType === 'application/json' ? 'body' : `body (${mediaType})`, type: typeOf(schema), required: required.has(field) });
        }
      }
      const answers: AnswerView[] = Object.entries(op.responses ?? {}).map(([status, r]) => {
        const [mediaType, content] = Object.entries(r.content ?? {})[0] ?? ['', {}];
        return { status, description: descriptionHtml(r.description ?? ''), type: typeOf((content as { schema?: Schema }).schema), mediaType };
      });
      group.operations.push({ id: `${method}-${anchor(path)}`, method: method.toUpperCase(), path, fields, answers });
    }
  }
  const entities = Object.entries(doc.components?.schemas ?? {})
    .map(([name, schema]) => ({ id: `entity-${anchor(name)}`, name, description: (schema.description as string | undefined) ?? '' }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return { groups: [...groups.values()].sort((a, b) => a.name.localeCompare(b.name)), entities };
}

export default async function apiPageRoutes(app: FastifyInstance, { ctx, apiDescription }: RouteOptions & { apiDescription: ApiDescription }) {
  const { config } = ctx;
  let view: ReturnType<typeof apiPageView> & { info: Document['info'] } | null = null;
  app.get('/about/api', async (request, reply) => {
    if (!view) {
      const doc = JSON.parse(await apiDescription.text(config.publicUrl, config.softwareVersion)) as Document;
      view = { info: doc.info, ...apiPageView(doc) };
    }
    const head = headTags({ canonical: `${config.publicUrl}/about/api`, description: `The client API of ${config.instanceTitle}` });
    const body = renderView('public/api', { chrome: publicChrome(config, await viewerOf(request), `API - ${config.instanceTitle}`, head), ...view });
    return reply.type(HTML).header('vary', 'Cookie').send(body);
  });
}
