import type { AgentConfig, ToolConfig } from '@loopline/core';
import type { Generated, Insertable, Selectable } from 'kysely';
import type { CreatedAt, Json } from './columns.ts';

// agents and tools: per-tenant named configurations, versioned on every change.

export interface AgentTable {
  tenant_id: string;
  name: string;
  config: Json<AgentConfig>;
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
  version: Generated<number>;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}
export type ToolRow = Selectable<ToolTable>;
export type NewToolRow = Insertable<ToolTable>;
