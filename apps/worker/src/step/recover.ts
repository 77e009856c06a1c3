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

// Closes what a dead runner left open: an assistant message with no finish and no error.
// Completed tool results are kept; pending or running tools become interrupted errors (never
// re-run: the tool may have executed); the message gets a StepInterruptedError. The loop then
// re-derives its next move from the log as if nothing happened.

export function unfinishedAssistants(history: WithParts[]): WithParts[] {
  return history.filter((m) => m.info.role === 'assistant' && m.info.finish === undefined && !m.info.error);
}

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

/** Returns true when it closed something (the caller reloads history). */
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
