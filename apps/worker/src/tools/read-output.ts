import { READ_OUTPUT_TOOL, readOutputSlice } from '@loopline/core';
import { readToolOutput } from '@loopline/db';
import type { Store } from '../deps.ts';
import type { ToolResult } from './webhook.ts';

// The built-in read_output tool: offered whenever the model view holds a truncated tool output,
// so the model can page through or search the full text stored in PostgreSQL.

/** The definition lives in core, so the gateway's request overhead counts the same tool. */
export { READ_OUTPUT_TOOL };

/** The built-in read_output tool: a slice or search of a stored full tool output. */
export async function readOutput(
  deps: Store,
  ctx: { tenantId: string; sessionId: string },
  input: Record<string, unknown>,
): Promise<ToolResult> {
  const outputId = typeof input.outputId === 'string' ? input.outputId : '';
  const stored = await readToolOutput(deps.db, ctx.tenantId, ctx.sessionId, outputId);
  if (!stored) return { output: `No stored output with id "${outputId}" (it may have expired).` };
  return {
    output: readOutputSlice(stored.content, {
      offset: typeof input.offset === 'number' ? input.offset : undefined,
      limit: typeof input.limit === 'number' ? input.limit : undefined,
      pattern: typeof input.pattern === 'string' ? input.pattern : undefined,
    }),
    title: `read_output ${outputId}`,
  };
}
