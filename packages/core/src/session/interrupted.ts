// What a dead runner left open (docs/durability.md §5), as the next runner closes it: an assistant
// message with neither finish nor error is an interrupted step, and its pending or running tool
// calls become interrupted errors that are never run again (the tool may have executed).

import type { WithParts } from '../schema/message.ts';
import type { ToolPart } from '../schema/part.ts';
import { INTERRUPTED_TOOL_OUTPUT } from './placeholders.ts';

/** Assistant messages with neither finish nor error: a runner died in their step. */
export function unfinishedAssistants(history: readonly WithParts[]): WithParts[] {
  return history.filter((m) => m.info.role === 'assistant' && m.info.finish === undefined && !m.info.error);
}

/** A pending or running call as an interrupted error (never re-run: it may have executed); others as is. */
export function interruptTool(part: ToolPart, now: number): ToolPart {
  if (part.state.status !== 'pending' && part.state.status !== 'running') return part;
  const start = part.state.status === 'running' ? part.state.time.start : now;
  return {
    ...part,
    state: {
      status: 'error',
      input: part.state.input,
      error: INTERRUPTED_TOOL_OUTPUT,
      interrupted: true,
      time: { start, end: now },
    },
  };
}
