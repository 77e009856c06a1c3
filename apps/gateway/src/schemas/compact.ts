import { z } from 'zod';

// Schema of POST /v1/sessions/:id/compact (routes/compact.ts).

export const CompactBody = z
  .strictObject({
    instructions: z.string().min(1).max(20_000).optional().describe('Added to the summary prompt'),
  })
  .nullish()
  .describe('Optional: extra instructions for this summary')
  .meta({ example: { instructions: 'Keep every file name and the open questions.' } });
