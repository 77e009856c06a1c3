import type { Insertable, Selectable } from 'kysely';
import type { CreatedAt, JsonWithDefault, NullableTimestamp } from './columns.ts';

// tenants and api_keys: who may call the API. Keys are stored as sha256 hex only.

export interface TenantTable {
  id: string;
  name: string;
  settings: JsonWithDefault<Record<string, unknown>>;
  created_at: CreatedAt;
}
export type TenantRow = Selectable<TenantTable>;
export type NewTenantRow = Insertable<TenantTable>;

export interface ApiKeyTable {
  id: string;
  tenant_id: string;
  /** sha256 hex of the whole key. */
  key_hash: string;
  /** First 8 characters of the key, for display. */
  prefix: string;
  created_at: CreatedAt;
  revoked_at: NullableTimestamp;
}
export type ApiKeyRow = Selectable<ApiKeyTable>;
export type NewApiKeyRow = Insertable<ApiKeyTable>;
