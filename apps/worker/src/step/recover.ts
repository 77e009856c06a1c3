import {
  type AssistantMessage,
  countPart,
  errorData,
  interruptTool,
  type Part,
  unfinishedAssistants,
  type WithParts,
} from '@loopline/core';
import { updateMessageInfo, updatePart } from '@loopline/db';
import type { SessionWriter } from '../session-writer.ts';

// Closes what a dead runner left open (docs/durability.md §5): an assistant message with neither
// finish nor error gets StepInterruptedError, and its pending or running tools interrupted errors
// (core interrupted.ts decides which and how; this file writes them).

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
