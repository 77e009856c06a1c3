import { tenantLimits } from '@loopline/core';
import {
  createApiKey,
  createTenant,
  type Db,
  getTenant,
  listApiKeys,
  revokeApiKey,
  type TenantInfo,
  updateTenantLimits,
} from '@loopline/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notFound } from '../lib/http-error.ts';
import { iso } from '../lib/sessions.ts';
import {
  CreateKeyResponse,
  CreateTenantBody,
  CreateTenantResponse,
  PatchTenantBody,
  TenantDetail,
  TenantKeyParams,
  TenantParams,
} from '../schemas/admin.ts';
import { ID_PATTERN, withErrors } from '../schemas/shared.ts';

// Operator routes (/v1/admin, operator token checked by the enclosing scope): tenants and keys.
// An API key is returned once, at creation; only its hash is stored. A tenant's settings hold its
// limits (concurrency, token budget, request rate), changed with PATCH.

const operator = { tags: ['admin'], security: [{ operator: [] }] };

/** Operator routes: tenants and their API keys. */
export const adminRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps;

  app.post(
    '/tenants',
    {
      schema: {
        ...operator,
        summary: 'Create a tenant and its first API key',
        description:
          'Operator token required. The API key is returned once, here; only its SHA-256 hash is stored. ' +
          'The tenant uses it as `Authorization: Bearer <api key>` on /v1/*.',
        body: CreateTenantBody,
        response: withErrors({ 201: CreateTenantResponse }),
      },
    },
    async (request, reply) => {
      const { tenant, apiKey, keyId } = await createTenant(db, { name: request.body.name });
      request.log.info({ tenantId: tenant.id, keyId }, 'tenant created');
      return reply.status(201).send({
        tenant: { id: tenant.id, name: tenant.name, createdAt: iso(tenant.createdAt) },
        apiKey,
        keyId,
      });
    },
  );

  app.get(
    '/tenants/:id',
    {
      schema: {
        ...operator,
        summary: 'A tenant: its limits and API keys',
        description:
          'Operator token required. The limits set for the tenant (an absent one is the deployment default) ' +
          'and every API key it has, revoked ones included; keys are shown by id and prefix only.',
        params: TenantParams,
        response: withErrors({ 200: TenantDetail }),
      },
    },
    async (request) => {
      const tenantId = request.params.id;
      const tenant = ID_PATTERN.test(tenantId) ? await getTenant(db, tenantId) : undefined;
      if (!tenant) throw notFound('tenant', tenantId);
      return tenantDetail(db, tenant);
    },
  );

  app.patch(
    '/tenants/:id',
    {
      schema: {
        ...operator,
        summary: "Change a tenant's limits",
        description:
          'Numbers set limits, null removes one (the deployment default applies), absent keys stay. Applies at ' +
          "once: the gateway reads the limits with every request's key, workers before every model call.",
        params: TenantParams,
        body: PatchTenantBody,
        response: withErrors({ 200: TenantDetail }),
      },
    },
    async (request) => {
      const tenantId = request.params.id;
      const tenant = ID_PATTERN.test(tenantId)
        ? await updateTenantLimits(db, tenantId, request.body.limits)
        : undefined;
      if (!tenant) throw notFound('tenant', tenantId);
      request.log.info({ tenantId, limits: tenantLimits(tenant.settings) }, 'tenant limits changed');
      return tenantDetail(db, tenant);
    },
  );

  app.post(
    '/tenants/:id/keys',
    {
      schema: {
        ...operator,
        summary: 'Create another API key for a tenant',
        description:
          'Operator token required. Keys are independent: create a new one, roll it out, then revoke the ' +
          'old one. 404 for an unknown tenant.',
        params: TenantParams,
        response: withErrors({ 201: CreateKeyResponse }),
      },
    },
    async (request, reply) => {
      const tenantId = request.params.id;
      const tenant = ID_PATTERN.test(tenantId) ? await getTenant(db, tenantId) : undefined;
      if (!tenant) throw notFound('tenant', tenantId);
      const { keyId, apiKey } = await createApiKey(db, tenant.id);
      request.log.info({ tenantId, keyId }, 'api key created');
      return reply.status(201).send({ tenantId, keyId, apiKey });
    },
  );

  app.delete(
    '/tenants/:id/keys/:keyId',
    {
      schema: {
        ...operator,
        summary: 'Revoke an API key (requests with it get 401 from now on)',
        description:
          'Operator token required. 204 with no body; 404 when the key is unknown or not the tenant’s.',
        params: TenantKeyParams,
        response: withErrors({ 204: z.null().describe('Revoked') }),
      },
    },
    async (request, reply) => {
      const { id: tenantId, keyId } = request.params;
      const revoked =
        ID_PATTERN.test(tenantId) && ID_PATTERN.test(keyId) ? await revokeApiKey(db, tenantId, keyId) : false;
      if (!revoked) throw notFound('api key', keyId);
      request.log.info({ tenantId, keyId }, 'api key revoked');
      return reply.status(204).send(null);
    },
  );
};

async function tenantDetail(db: Db, tenant: TenantInfo) {
  const keys = await listApiKeys(db, tenant.id);
  return {
    id: tenant.id,
    name: tenant.name,
    createdAt: iso(tenant.createdAt),
    limits: tenantLimits(tenant.settings),
    keys: keys.map((k) => ({
      id: k.id,
      prefix: k.prefix,
      createdAt: iso(k.createdAt),
      revokedAt: k.revokedAt ? iso(k.revokedAt) : null,
    })),
  };
}
