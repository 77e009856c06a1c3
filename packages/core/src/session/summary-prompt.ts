// The words of summary compaction (docs/context.md §5.3): the hidden compaction agent's system prompt,
// the summary template, and the final user message asking for an anchored summary (or a merge of
// chunk summaries). Text only; compaction.ts assembles the messages around it.

/** System prompt of the hidden `compaction` agent (no tools). */
export const COMPACTION_SYSTEM_PROMPT = [
  'You write the working state of a conversation between a user and an AI agent, so that the agent can',
  'carry on from it alone. Be precise and complete; prefer exact details over generalities. Do not call',
  'tools and do not answer the conversation: only write the requested text.',
].join('\n');

/** The sections every summary follows. */
export const SUMMARY_TEMPLATE = `## Goal
[What the user is trying to accomplish]

## Instructions
- [Important instructions, constraints and preferences the user gave]
- [If there is a plan or a spec, what it says]

## Discoveries
[What was learned: facts about the code, data or systems, causes of errors, approaches that did not work]

## Accomplished
- Done: [work completed]
- In progress: [what was being worked on at the end]
- Left: [what remains, and the next steps]

## Relevant files and resources
[A structured list of the files, directories, URLs, commands and other resources that matter, a few words on each]`;

export const DEFAULT_SUMMARY_PROMPT = `Write a detailed account of the conversation above for continuing it. An agent will read only this text and the most recent messages, which are kept as they are, and must be able to continue the work without asking again.

Rules:
- Keep exact identifiers, file paths, URLs, commands, error messages, versions and numbers, verbatim.
- Keep decisions with their reasons, and the user's preferences and constraints.
- Write in the language the user writes in.
- Write it as the state of the work. Do not say that this is a summary, that anything was summarised, shortened or omitted, or that the conversation was long.
- Answer with the text only, following this template:

---
${SUMMARY_TEMPLATE}
---`;

export interface SummaryPromptInput {
  /** The newest earlier summary: updated, not re-derived from messages it already covers. */
  previousSummary?: string | undefined;
  /** Replaces DEFAULT_SUMMARY_PROMPT (an agent's `compaction.prompt`). */
  prompt?: string | undefined;
  /** Added after the prompt (an agent's `compaction.extraContext`). */
  extraContext?: readonly string[] | undefined;
  /** Added last (`POST /compact` instructions). */
  instructions?: string | undefined;
}

function previousSummaryBlock(previous: string): string {
  return `<previous-summary>
${previous}
</previous-summary>

The conversation above continues from the state described in <previous-summary>. Update that text with everything above: keep what is still true, change what has changed, add what is new, and drop only what is obsolete. Write one complete text in the template, not a list of changes.`;
}

/** The final user message of a compaction request. */
export function buildSummaryPrompt(input: SummaryPromptInput): string {
  const blocks: string[] = [];
  if (input.previousSummary?.trim()) blocks.push(previousSummaryBlock(input.previousSummary.trim()));
  blocks.push(input.prompt?.trim() ? input.prompt.trim() : DEFAULT_SUMMARY_PROMPT);
  for (const extra of input.extraContext ?? []) if (extra.trim()) blocks.push(extra.trim());
  if (input.instructions?.trim()) blocks.push(`Additional instructions:\n${input.instructions.trim()}`);
  return blocks.join('\n\n');
}

/**
 * The merge request of a chunked compaction: partial summaries of consecutive parts of the head,
 * oldest first, folded (with the previous summary, if any) into one text in the template.
 */
export function buildMergePrompt(partials: readonly string[], input: SummaryPromptInput = {}): string {
  const parts = partials.map((text, i) => `<part index="${i + 1}">\n${text.trim()}\n</part>`).join('\n\n');
  const intro = `The conversation was read in ${partials.length} consecutive parts, oldest first. Below is the working state written for each part.

${parts}

Combine them into one complete text about the whole conversation: later parts override earlier ones where they disagree.`;
  return `${intro}\n\n${buildSummaryPrompt(input)}`;
}
