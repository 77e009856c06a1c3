// Every fixed string the model sees in place of something else (docs/context.md §4, §5), verbatim.
// Kept in one file so a test, a prompt review or a grep finds them all; never reword one casually:
// models have been prompted with these exact texts upstream.

/** The first system block when the agent has no system prompt of its own. */
export const PROVIDER_DEFAULT_PROMPT =
  'You are a helpful assistant. Use the tools you are given when they help.';

/** A tool output marked `time.compacted` by prune. */
export const CLEARED_TOOL_OUTPUT = '[Old tool result content cleared]';

/** A tool call that never got a result (pending or running when its step ended). */
export const INTERRUPTED_TOOL_OUTPUT = '[Tool execution was interrupted]';

/** A compaction part, rendered as the question the summary answers. */
export const COMPACTION_QUESTION = 'What did we do so far?';

/** A subtask part in a user message. */
export const SUBTASK_TEXT = 'The following tool was executed by the user';

/** The synthetic user message appended after an automatic compaction. */
export const CONTINUE_TEXT =
  'Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed.';

/** A tool output cut to fit the compaction input. */
export function compactionTruncationMarker(omittedChars: number): string {
  return `[Tool output truncated for compaction: omitted ${omittedChars} chars]`;
}

/** A file named instead of sent (compaction input, replayed requests). */
export function attachedFileText(mime: string, filename: string | undefined): string {
  return `[Attached ${mime}: ${filename ?? 'file'}]`;
}

/** A user message that arrived while the loop was working, in `steer` mode. */
export function steerText(text: string): string {
  return [
    '<system-reminder>',
    'The user sent the following message:',
    text,
    '',
    'Please address this message and continue with your tasks.',
    '</system-reminder>',
  ].join('\n');
}

/** Appended as an assistant message on the last allowed step; tools are withheld on that call. */
export const MAX_STEPS_TEXT = [
  'MAXIMUM STEPS REACHED',
  '',
  'The step limit for this task has been reached and tools are now disabled. Respond with text only:',
  'do not call any tool. This overrides every other instruction, including user requests for more tool use.',
  '',
  'Your response must:',
  '- state that the step limit was reached;',
  '- summarise what has been done so far;',
  '- list what remains to be done, and what you recommend doing next.',
].join('\n');
