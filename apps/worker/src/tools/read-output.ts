import { setFlagsFromString } from 'node:v8';
import { READ_OUTPUT_TOOL, readOutputSlice } from '@loopline/core';
import { readToolOutput } from '@loopline/db';
import type { Store } from '../deps.ts';
import type { ToolResult } from './webhook.ts';

// The built-in read_output tool: offered whenever the model view holds a truncated tool output,
// so the model can page through or search the full text stored in PostgreSQL.

// A search pattern runs only on V8's linear-time regex engine (core's compilePattern: the `l`
// flag), which is behind this flag; it changes nothing for regexes without `l`. Set where the tool
// is loaded, so every process that can run it (the worker, a test) has it before the first search.
setFlagsFromString('--enable-experimental-regexp-engine');

/** The definition lives in core, so the gateway's request overhead counts the same tool. */
export { READ_OUTPUT_TOOL };

/** How long one read_output search may run before it stops and says where to go on. */
export const READ_SEARCH_BUDGET_MS = 500;

/** The built-in read_output tool: a slice or search of a stored full tool output. */
export async function readOutput(
  deps: Store,
  ctx: { tenantId: string; sessionId: string },
  input: Record<string, unknown>,
): Promise<ToolResult> {
  const outputId = typeof input.outputId === 'string' ? input.outputId : '';
  const stored = await readToolOutput(deps.db, ctx.tenantId, ctx.sessionId, outputId);
  if (!stored) return { output: `No stored output with id "${outputId}" (it may have expired).` };
  // A search runs on the event loop every session of this process shares: it stops after its
  // time budget and says where to go on (the model's next call does, after other work ran).
  const deadline = performance.now() + READ_SEARCH_BUDGET_MS;
  return {
    output: readOutputSlice(stored.content, {
      offset: typeof input.offset === 'number' ? input.offset : undefined,
      limit: typeof input.limit === 'number' ? input.limit : undefined,
      pattern: typeof input.pattern === 'string' ? input.pattern : undefined,
      stop: () => performance.now() > deadline,
    }),
    title: `read_output ${outputId}`,
  };
}
