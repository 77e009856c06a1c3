import { TenantLimits, TenantLimitsPatch } from '@loopline/core';
import { z } from 'zod';
import { Timestamp } from './shared.ts';

// Schemas of the operator's routes (routes/admin.ts): tenants, their API keys and limits.

export const CreateTenantBody = z
  .strictObject({ name: z.string().min(1).max(200).describe('Display name of the tenant') })
  .meta({ example: { name: 'acme' } });

export const TenantParams = z.object({ id: z.string().describe('Tenant id (ten_…)') });
export const TenantKeyParams = z.object({
  id: z.string().describe('Tenant id (ten_…)'),
  keyId: z.string().describe('API key id (key_…)'),
});

export const TenantView = z.object({ id: z.string(), name: z.string(), createdAt: Timestamp });

const EXAMPLE_API_KEY = 'll_9fQz3kT7xWmB2cR8vYp4LhN6sJd1GaE5';

export const CreateTenantResponse = z
  .object({
    tenant: TenantView,
    apiKey: z.string().describe('The API key. Shown once: only its hash is stored'),
    keyId: z.string().describe('Id of the key, for revocation'),
  })
  .describe('The new tenant and its first API key')
  .meta({
    example: {
      tenant: { id: 'ten_01JQ8Z0', name: 'acme', createdAt: '2026-05-01T10:00:00.000Z' },
      apiKey: EXAMPLE_API_KEY,
      keyId: 'key_01JQ8Z1',
    },
  });

export const CreateKeyResponse = z
  .object({
    tenantId: z.string(),
    apiKey: z.string().describe('The API key. Shown once: only its hash is stored'),
    keyId: z.string(),
  })
  .describe('A new API key of the tenant')
  .meta({ example: { tenantId: 'ten_01JQ8Z0', apiKey: EXAMPLE_API_KEY, keyId: 'key_01JQ8Z2' } });

export const TenantLimitsView = TenantLimits.describe(
  'Limits set for the tenant; an absent one is the deployment default (LOOPLINE_MAX_CONCURRENT_SESSIONS, ' +
    'LOOPLINE_TOKENS_PER_MINUTE, LOOPLINE_RATE_LIMIT_PER_MINUTE)',
);

export const TenantDetail = z
  .object({
    id: z.string(),
    name: z.string(),
    createdAt: Timestamp,
    limits: TenantLimitsView,
    keys: z
      .array(
        z.object({
          id: z.string(),
          prefix: z.string().describe('First 8 characters of the key'),
          createdAt: Timestamp,
          revokedAt: Timestamp.nullable(),
        }),
      )
      .describe('Every API key of the tenant, oldest first (the keys themselves are never shown again)'),
  })
  .describe('A tenant, its limits and its API keys')
  .meta({
    example: {
      id: 'ten_01JQ8Z0',
      name: 'acme',
      createdAt: '2026-05-01T10:00:00.000Z',
      limits: { maxConcurrentSessions: 3, tokensPerMinute: 200000, requestsPerMinute: 600 },
      keys: [
        { id: 'key_01JQ8Z1', prefix: 'll_9fQz3', createdAt: '2026-05-01T10:00:00.000Z', revokedAt: null },
      ],
    },
  });

export const PatchTenantBody = z
  .strictObject({
    limits: TenantLimitsPatch.describe(
      'maxConcurrentSessions: sessions running at once (others wait, status queued); tokensPerMinute: model ' +
        'tokens per minute (calls wait for budget); requestsPerMinute: API requests per key per minute (429 ' +
        'over it). A number sets a limit, null removes it, an absent key is left as it is',
    ),
  })
  .meta({
    example: { limits: { maxConcurrentSessions: 3, tokensPerMinute: 200000, requestsPerMinute: null } },
  });
