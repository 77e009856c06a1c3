import { z } from 'zod';

// Schemas of the SSE event stream (routes/events.ts): where a reconnecting client resumes.

export const EventsQuery = z.strictObject({
  after: z
    .string()
    .optional()
    .describe('Resume after this stream id (same as the Last-Event-ID header, which wins)'),
});

export const EventsHeaders = z.looseObject({
  'last-event-id': z.string().optional().describe('Stream id of the last event received'),
});
