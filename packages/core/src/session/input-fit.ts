// Whether one user input can ever be read by the model (docs/context.md §2): the words the user sent
// must reach the model whole, beside the system prompt and at least the shortest summary of what
// came before. An input larger than that cannot be made to fit by any compaction (compaction
// never shortens the user's own request), so the gateway refuses it up front with a clear 4xx
// instead of letting the loop compact in vain and answer something it never read.

/** Room kept beside the input for the compaction question and the shortest structural summary. */
export const INPUT_SUMMARY_RESERVE = 256;

/** Inputs smaller than this fit every usable window Loopline accepts; they are not measured. */
export const INPUT_CHECK_FLOOR = 256;

export interface InputFitInput {
  /** tiktoken count of the input's parts (as stored on them). */
  tokens: number;
  /** Provider tokens per tiktoken token: the session's learned ratio, else the family prior. */
  ratio: number;
  /** The agent's usable window (contextBudget().usable); 0 = unknown window, never refused. */
  usable: number;
  /** tiktoken count of what is always sent with it (system prompt, the message's own system text). */
  overhead?: number;
}

export interface InputFit {
  fits: boolean;
  /** Provider-scale size of the input. */
  size: number;
  /** Provider-scale room an input may take. */
  room: number;
}

/** Whether one user input fits the usable window beside the overhead and a summary reserve. */
export function inputFit(input: InputFitInput): InputFit {
  const size = Math.ceil(input.tokens * input.ratio);
  const overhead = Math.ceil((input.overhead ?? 0) * input.ratio);
  const room = Math.max(0, input.usable - overhead - INPUT_SUMMARY_RESERVE);
  return { fits: input.usable <= 0 || size <= room, size, room };
}
