import { z } from 'zod';

// What every route's schemas share: the error body and the error responses a route documents, the
// name and id patterns and parameters, timestamps and metadata. No .transform() in a response
// schema: the type provider serializes with zod encode(), which refuses unidirectional
// transforms, so dates leave the handlers as ISO strings.

export const ErrorResponse = z
  .object({
    error: z.object({
      code: z.string().describe('Stable machine-readable code, e.g. validation_error, not_found'),
      message: z.string().describe('Human-readable explanation'),
      details: z.unknown().optional().describe('Structured details, e.g. the failed validation issues'),
    }),
  })
  .describe('Every error response')
  .meta({ example: { error: { code: 'not_found', message: 'session "ses_x" not found' } } });

const errors = {
  400: ErrorResponse,
  401: ErrorResponse,
  404: ErrorResponse,
  409: ErrorResponse,
  413: ErrorResponse,
  415: ErrorResponse,
  429: ErrorResponse,
} as const;

/** The error responses a route documents: the common ones plus those it names. */
export function withErrors<T extends Record<number, z.ZodType>>(ok: T) {
  return { ...ok, ...errors };
}

export const NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
/** Ids Loopline hands out (prefixed, url-safe); anything else cannot exist and is a 404. */
export const ID_PATTERN = /^[a-zA-Z0-9_-]{1,128}$/;

export const NameParam = z.object({
  name: z.string().describe('Agent or tool name: letters, digits, "_" and "-", 1–64 characters'),
});
/** GET /v1/agents and /v1/tools: all of them (bounded by the tenant caps), or pages by name. */
export const NamedListQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .optional()
    .describe(
      'Page size (1–1000); without it every one is returned (at most the tenant cap: 500 agents, 1,000 tools)',
    ),
  cursor: z
    .string()
    .regex(NAME_PATTERN, 'cursor must be the nextCursor of the previous page')
    .optional()
    .describe('nextCursor of the previous page: the names after it (with limit, a page of them)'),
});
export const NextNameCursor = z
  .string()
  .nullable()
  .describe(
    'With limit: pass as ?cursor= for the next page; null on the last page (always null without limit)',
  );
export const PutNameParam = z.object({
  name: z
    .string()
    .regex(NAME_PATTERN, 'name must match ^[a-zA-Z0-9_-]{1,64}$')
    .describe('Agent or tool name: letters, digits, "_" and "-", 1–64 characters'),
});
export const IdParam = z.object({ id: z.string().describe('Session id (ses_…)') });

export const Timestamp = z.string().describe('ISO 8601 timestamp');
export const Metadata = z
  .record(z.string(), z.unknown())
  .describe('Free-form JSON kept with the session, returned as is');

/** The most metadata a request may store (its JSON): it is returned by every session read and list. */
export const METADATA_MAX_BYTES = 16 * 1024;

/** Whether a value's JSON is at most `max` bytes (UTF-8). */
export const jsonFits = (value: unknown, max: number): boolean =>
  Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8') <= max;

/** Metadata as a request brings it: free-form JSON of at most METADATA_MAX_BYTES. */
export const MetadataInput = Metadata.refine(
  (m) => jsonFits(m, METADATA_MAX_BYTES),
  `metadata must be at most ${METADATA_MAX_BYTES} bytes of JSON`,
);

export const DeletedDefinition = z
  .object({ deleted: z.literal(true), name: z.string() })
  .describe('The definition is gone')
  .meta({ example: { deleted: true, name: 'researcher' } });
