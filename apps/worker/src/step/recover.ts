import {
  type AssistantMessage,
  countPart,
  errorData,
  INTERRUPTED_TOOL_OUTPUT,
  type Part,
  type ToolPart,
  type WithParts,
} from '@loopline/core';
import { updateMessageInfo, updatePart } from '@loopline/db';
import type { SessionWriter } from '../session-writer.ts';

// Closes what a dead runner left open (docs/durability.md §5): an assistant message with neither
// finish nor error gets StepInterruptedError, and its pending or running tools interrupted errors.

/** Assistant messages with neither finish nor error: a runner died in their step. */
export function unfinishedAssistants(history: WithParts[]): WithParts[] {
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

/** Closes the unfinished replies in one write; true when it closed something (the caller reloads). */
export async function closeInterrupted(
  writer: SessionWriter,
  history: WithParts[],
  now: number,
): Promise<boolean> {
  const open = unfinishedAssistants(history);
  if (open.length === 0) return false;
  await writer.write(async (trx, emit) => {
    for (const msg of open) {
      for (const part of msg.parts) {
        if (part.type !== 'tool') continue;
        const interrupted = interruptTool(part, now);
        if (interrupted !== part) {
          // The result changed (interrupted error instead of the placeholder): count it again.
          const closed = countPart(interrupted, writer.deps.tokenizer);
          await updatePart(trx, writer.ctx.tenantId, closed as Part);
          emit({ type: 'part.updated', part: closed });
        }
      }
      const info: AssistantMessage = {
        ...(msg.info as AssistantMessage),
        error: errorData('StepInterruptedError'),
        time: { ...msg.info.time, completed: now },
      };
      await updateMessageInfo(trx, writer.ctx.tenantId, info);
      emit({ type: 'message.updated', message: info });
    }
  });
  return true;
}
