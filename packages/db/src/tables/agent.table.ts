import type { AgentConfig, ToolConfig } from '@loopline/core';
import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { CreatedAt, Json } from './columns.ts';

// agents and tools: per-tenant named configurations, versioned on every change.

export interface AgentTable {
  tenant_id: string;
  name: string;
  config: Json<AgentConfig>;
  /** The tenant's own model key for `config.baseURL`, sealed (AES-256-GCM); never returned by GET. */
  credential: string | null;
  version: Generated<number>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}
export type AgentRow = Selectable<AgentTable>;
export type NewAgentRow = Insertable<AgentTable>;

export interface ToolTable {
  tenant_id: string;
  name: string;
  config: Json<ToolConfig>;
  /** Webhook signing secret (`whsec_…`), sealed (AES-256-GCM); shown once, never returned by GET. */
  signing_secret: string | null;
  version: Generated<number>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}
export type ToolRow = Selectable<ToolTable>;
export type NewToolRow = Insertable<ToolTable>;

/** Bytes fetched for a message's file part (worker attachments.ts). */
export interface AttachmentTable {
  tenant_id: string;
  part_id: string;
  session_id: string;
  mime: string;
  size: number;
  data: ColumnType<Buffer, Buffer, never>;
  fetched_at: CreatedAt;
}
