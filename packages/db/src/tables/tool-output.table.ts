import type { ColumnType, Insertable, Selectable } from 'kysely';
import type { CreatedAt } from './columns.ts';

// tool_outputs: the full text of tool outputs truncated at ingest, read back by read_output
// until it expires.

export interface ToolOutputTable {
  id: string;
  tenant_id: string;
  session_id: string;
  part_id: string;
  call_id: string;
  content: string;
  lines: number;
  bytes: number;
  created_at: CreatedAt;
  expires_at: ColumnType<Date, Date | string, Date | string>;
}
export type ToolOutputRow = Selectable<ToolOutputTable>;
export type NewToolOutputRow = Insertable<ToolOutputTable>;
