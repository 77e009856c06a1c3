import type { Db, NamedConfig, NamedConfigPage } from '@loopline/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { tenantOf } from '../plugins/auth.ts';
import { DeletedDefinition, NamedListQuery, NameParam, withErrors } from '../schemas/shared.ts';
import { notFound } from './http-error.ts';
import { iso, isValidName } from './sessions.ts';

// The read and delete routes of a tenant's named configurations, agents and tools alike: GET
// /<plural>/:name, GET /<plural> (all, or pages by name with ?limit and ?cursor), DELETE
// /<plural>/:name. Each kind brings its store functions, its schemas and its words; PUT stays
// with the kind (what it checks and seals differs).

type App = Parameters<FastifyPluginAsyncZod>[0];

/** Configs read per statement of a list. */
const LIST_CHUNK = 100;
/** The most config JSON one list answer holds (a single larger config alone). */
export const LIST_MAX_BYTES = 16 * 1024 * 1024;
type Docs = { summary: string; description: string };

export interface NamedConfigRoutes<C> {
  /** 'agent' or 'tool': the not-found message and the log field. */
  noun: 'agent' | 'tool';
  /** 'agents' or 'tools': the path and the list's field. */
  plural: 'agents' | 'tools';
  view: z.ZodType;
  list: z.ZodType;
  get: (db: Db, tenantId: string, name: string) => Promise<NamedConfig<C> | undefined>;
  all: (db: Db, tenantId: string, page?: NamedConfigPage) => Promise<NamedConfig<C>[]>;
  remove: (db: Db, tenantId: string, name: string) => Promise<boolean>;
  /** Refuses a delete by throwing (a tool that an agent still names). */
  beforeDelete?: (tenantId: string, name: string) => Promise<void>;
  docs: { get: Docs; list: Docs; delete: Docs };
}

/** The API's view of a stored named config. */
export function namedView<C>(item: NamedConfig<C>) {
  return {
    name: item.name,
    config: item.config,
    version: item.version,
    createdAt: iso(item.createdAt),
    updatedAt: iso(item.updatedAt),
  };
}

/** Registers GET one, GET all and DELETE for a kind of named config, after its PUT. */
export function namedConfigRoutes<C>(app: App, kind: NamedConfigRoutes<C>): void {
  const { db } = app.deps;
  const tags = [kind.plural];

  app.get(
    `/${kind.plural}/:name`,
    { schema: { tags, ...kind.docs.get, params: NameParam, response: withErrors({ 200: kind.view }) } },
    async (request) => {
      const { name } = request.params;
      const item = isValidName(name) ? await kind.get(db, tenantOf(request).id, name) : undefined;
      if (!item) throw notFound(kind.noun, name);
      return namedView(item);
    },
  );

  app.get(
    `/${kind.plural}`,
    {
      schema: {
        tags,
        ...kind.docs.list,
        querystring: NamedListQuery,
        response: withErrors({ 200: kind.list }),
      },
    },
    async (request) => {
      const { limit, cursor } = request.query;
      // Without limit every one (after the cursor): a tenant holds at most MAX_AGENTS_PER_TENANT /
      // MAX_TOOLS_PER_TENANT of them. Read LIST_CHUNK at a time, and a page also ends (nextCursor)
      // at the config that would take it past LIST_MAX_BYTES of JSON: 500 agents of 256 KiB would
      // be 125 MiB in the gateway for one request. One more than asked: whether a next page exists.
      const tenantId = tenantOf(request).id;
      const want = limit ?? Number.POSITIVE_INFINITY;
      const page: NamedConfig<C>[] = [];
      let bytes = 0;
      let after = cursor || undefined;
      for (;;) {
        const ask = Math.min(LIST_CHUNK, want + 1 - page.length);
        const items = await kind.all(db, tenantId, { limit: ask, ...(after ? { after } : {}) });
        for (const item of items) {
          const size = JSON.stringify(item.config).length;
          if (page.length === want || (page.length > 0 && bytes + size > LIST_MAX_BYTES))
            return { [kind.plural]: page.map(namedView), nextCursor: page.at(-1)!.name };
          page.push(item);
          bytes += size;
          after = item.name;
        }
        if (items.length < ask) return { [kind.plural]: page.map(namedView), nextCursor: null };
      }
    },
  );

  app.delete(
    `/${kind.plural}/:name`,
    {
      schema: {
        tags,
        ...kind.docs.delete,
        params: NameParam,
        response: withErrors({ 200: DeletedDefinition }),
      },
    },
    async (request) => {
      const { name } = request.params;
      const tenantId = tenantOf(request).id;
      if (!isValidName(name)) throw notFound(kind.noun, name);
      if (kind.beforeDelete) {
        // Unknown first (404), then the kind's refusal (409), then the delete.
        if (!(await kind.get(db, tenantId, name))) throw notFound(kind.noun, name);
        await kind.beforeDelete(tenantId, name);
      }
      if (!(await kind.remove(db, tenantId, name))) throw notFound(kind.noun, name);
      request.log.info({ tenantId, [kind.noun]: name }, `${kind.noun} deleted`);
      return { deleted: true as const, name };
    },
  );
}
