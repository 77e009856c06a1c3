import { ErrorData, SessionKind, SessionStatus } from '@loopline/core';
import { z } from 'zod';
import { ID_PATTERN, NAME_PATTERN } from './shared.ts';

// Schemas of the session listing, children and deletion (routes/session-list.ts).

const Timestamp = z.string().describe('ISO 8601 timestamp');
const MAX_METADATA_FILTER = 2_000;

/** A JSON object in a query parameter (metadata filters). */
const JsonObjectParam = z
  .string()
  .max(MAX_METADATA_FILTER)
  .refine((text) => {
    try {
      const value: unknown = JSON.parse(text);
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    } catch {
      return false;
    }
  }, 'must be a JSON object, e.g. {"userId":"u-42"}');

const STATUS_LIST = new RegExp(
  `^(${SessionStatus.options.join('|')})(,(${SessionStatus.options.join('|')}))*$`,
);

export const ListSessionsQuery = z.strictObject({
  status: z
    .string()
    .regex(STATUS_LIST, `status must be a comma-separated list of ${SessionStatus.options.join(', ')}`)
    .optional()
    .describe('Only these statuses, comma-separated (e.g. running,waiting)'),
  agent: z.string().regex(NAME_PATTERN, 'agent must be an agent name').optional().describe('Only this agent'),
  metadata: JsonObjectParam.optional().describe(
    'Only sessions whose metadata contains this JSON object (every key equal), e.g. {"userId":"u-42"}',
  ),
  parent: z
    .string()
    .regex(ID_PATTERN, 'parent must be a session id')
    .optional()
    .describe('Only child sessions (subagents) of this session'),
  createdAfter: z.iso
    .datetime({ offset: true })
    .optional()
    .describe('Only sessions created after this instant'),
  createdBefore: z.iso
    .datetime({ offset: true })
    .optional()
    .describe('Only sessions created before this instant'),
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('Page size (1–200, default 50)'),
  cursor: z.string().min(1).max(500).optional().describe('nextCursor of the previous page'),
});

export const SessionSummary = z
  .object({
    id: z.string(),
    agent: z.string().describe('Agent name'),
    kind: SessionKind,
    status: SessionStatus,
    statusDetail: z.string().nullable(),
    error: ErrorData.nullable(),
    title: z.string().nullable(),
    stepCount: z.number().int(),
    parentSessionId: z.string().nullable().describe('The session whose task tool started this one'),
    metadata: z.record(z.string(), z.unknown()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .describe('A session as listed (GET /v1/sessions/:id adds the token gauge and compactions)');
export type SessionSummary = z.infer<typeof SessionSummary>;

const EXAMPLE_SUMMARY = {
  id: 'ses_01JQ8Z9',
  agent: 'researcher',
  kind: 'interactive',
  status: 'idle',
  statusDetail: null,
  error: null,
  title: 'Weather in Paris this weekend',
  stepCount: 2,
  parentSessionId: null,
  metadata: { userId: 'u-42' },
  createdAt: '2026-05-01T10:00:00.000Z',
  updatedAt: '2026-05-01T10:00:04.200Z',
};

export const SessionList = z
  .object({
    sessions: z.array(SessionSummary).describe('Newest first'),
    nextCursor: z.string().nullable().describe('Pass as ?cursor= for the next page; null on the last page'),
  })
  .describe('One page of sessions, newest first')
  .meta({ example: { sessions: [EXAMPLE_SUMMARY], nextCursor: null } });

export const ChildrenQuery = z.strictObject({
  limit: ListSessionsQuery.shape.limit,
  cursor: ListSessionsQuery.shape.cursor,
});

export const DeleteSessionQuery = z.strictObject({
  force: z
    .enum(['true', 'false'])
    .default('false')
    .describe('true: abort a running turn first (and wait, up to about 10 s, for it to stop)'),
});

export const DeletedSession = z
  .object({
    deleted: z.literal(true),
    sessionIds: z.array(z.string()).describe('The session and every child session deleted with it'),
  })
  .describe('Everything stored for the session is gone')
  .meta({ example: { deleted: true, sessionIds: ['ses_01JQ8Z9'] } });
