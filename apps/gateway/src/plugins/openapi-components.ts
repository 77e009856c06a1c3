import {
  AgentConfig,
  AssistantMessage,
  ErrorData,
  Message,
  Part,
  TextPart,
  ToolPart,
  ToolState,
  Usage,
  UserMessage,
  WithParts,
} from '@loopline/core';
import { z } from 'zod';
import { CreateKeyResponse, CreateTenantResponse, TenantDetail } from '../schemas/admin.ts';
import { AgentList, AgentView } from '../schemas/agents.ts';
import { BatchView } from '../schemas/batches.ts';
import { ContextView, RevertResponse } from '../schemas/context.ts';
import { AcceptedMessage, FinishedTurn, MessagesResponse } from '../schemas/messages.ts';
import { AbortResponse, PendingToolCall, ToolResultsResponse } from '../schemas/session-control.ts';
import { DeletedSession, SessionList, SessionSummary } from '../schemas/session-list.ts';
import { CompactionRecord, CompactionSummary, SessionView, TokenGauge } from '../schemas/sessions.ts';
import { DeletedDefinition, ErrorResponse } from '../schemas/shared.ts';
import { ToolList, ToolView } from '../schemas/tools.ts';

// Named component schemas of the OpenAPI document: the zod schemas below get an `id` in zod's
// global registry, and fastify-type-provider-zod writes them once under components/schemas and
// $refs them everywhere else. Generated clients get these names as their types. Schemas that
// routes derive a variant from (a refinement, a parameter description, the SSE payload's
// example) stay inline: a $ref would drop what the variant adds.

const NAMES: Array<[z.ZodType, string]> = [
  [ErrorResponse, 'Problem'],
  [ErrorData, 'ErrorData'],
  [Usage, 'Usage'],
  [AgentConfig, 'AgentConfig'],
  [AgentView, 'Agent'],
  [AgentList, 'AgentList'],
  [ToolView, 'Tool'],
  [ToolList, 'ToolList'],
  [UserMessage, 'UserMessage'],
  [AssistantMessage, 'AssistantMessage'],
  [Message, 'Message'],
  [TextPart, 'TextPart'],
  [ToolState, 'ToolState'],
  [ToolPart, 'ToolPart'],
  [Part, 'Part'],
  [WithParts, 'MessageWithParts'],
  [TokenGauge, 'TokenGauge'],
  [CompactionRecord, 'CompactionRecord'],
  [CompactionSummary, 'CompactionSummary'],
  [PendingToolCall, 'PendingToolCall'],
  [SessionView, 'Session'],
  [SessionSummary, 'SessionSummary'],
  [SessionList, 'SessionList'],
  [AcceptedMessage, 'AcceptedMessage'],
  [FinishedTurn, 'FinishedTurn'],
  [MessagesResponse, 'MessageHistory'],
  [ContextView, 'Context'],
  [RevertResponse, 'RevertResult'],
  [AbortResponse, 'AbortResult'],
  [ToolResultsResponse, 'ToolResultsResult'],
  [DeletedSession, 'DeletedSession'],
  [DeletedDefinition, 'DeletedDefinition'],
  [BatchView, 'Batch'],
  [TenantDetail, 'Tenant'],
  [CreateTenantResponse, 'CreatedTenant'],
  [CreateKeyResponse, 'CreatedApiKey'],
];

/** Gives each schema its component name, keeping its description and example (idempotent). */
export function nameComponentSchemas(): void {
  for (const [schema, id] of NAMES) {
    const meta = z.globalRegistry.get(schema);
    if (meta?.id === id) continue;
    z.globalRegistry.add(schema, { ...meta, id });
  }
}
