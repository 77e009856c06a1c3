// toRequestMessages, resumable: a step whose view only grew since the previous step converts the
// new messages alone. The conversion is per message and the pair check a left fold whose only
// state is the set of call ids seen (toModelMessages never lets a tool message follow another
// message's calls), so continuing both from where the last call stopped gives exactly what a
// fresh toRequestMessages of the whole view gives. Anything else converts the view afresh.

import type { WithParts } from '../schema/message.ts';
import type { ModelMessage } from './model-message.ts';
import { type ToModelOptions, toModelMessages } from './to-model-messages.ts';
import { type PairProblem, repairPairsFrom } from './tool-pairs.ts';

/**
 * Where a conversion stopped: the view it converted (message objects, never mutated by whoever
 * holds them) and the checked model messages. Single use: extending it marks it spent (and takes
 * over its arrays), and a spent state converts afresh, so two holders never share one.
 */
export interface RequestState {
  readonly key: string;
  readonly view: readonly WithParts[];
  /** The checked (repaired) model messages of the whole view, in order. */
  readonly messages: ModelMessage[];
  /** Where each view message's checked model messages start in `messages` (one more at the end). */
  readonly starts: number[];
  /** Indexes of messages whose conversion reads `fileData` (converted again on every call). */
  readonly dynamic: number[];
  readonly problems: PairProblem[];
  /** Model messages before the check (PairProblem.index counts these). */
  readonly converted: number;
  /** Call ids the fold has seen. */
  readonly seen: Set<string>;
  spent: boolean;
}

export interface RequestMessages {
  messages: ModelMessage[];
  problems: PairProblem[];
  /** Pass it to the next call of the same session to convert only what was added. */
  state: RequestState;
}

/**
 * toRequestMessages(view, opts), converting only the messages appended since `prev` when `prev`
 * was made with the same options from a view that `view` starts with (the same message objects).
 */
export function requestMessages(
  view: readonly WithParts[],
  opts: ToModelOptions = {},
  prev?: RequestState,
): RequestMessages {
  const key = optionsKey(opts);
  const from = prev && !prev.spent && prev.key === key && extendsView(prev.view, view) ? prev : undefined;
  // A spent state is never read again: its arrays are extended in place.
  if (from) from.spent = true;
  const all = from ? from.messages : [];
  const starts = from ? from.starts : [0];
  const dynamic = from ? from.dynamic : [];
  const problems = from ? from.problems : [];
  const seen = from ? from.seen : new Set<string>();
  let converted = from ? from.converted : 0;
  for (let i = starts.length - 1; i < view.length; i++) {
    const msg = view[i]!;
    if (readsFileData(msg, opts)) dynamic.push(i);
    const out = toModelMessages([msg], opts);
    const checked = repairPairsFrom(out, seen, converted);
    for (const p of checked.problems) problems.push(p);
    for (const m of checked.messages) all.push(m);
    starts.push(all.length);
    converted += out.length;
  }
  const messages = all.slice();
  // A user message's http(s) files depend on this call's bytes (the check never changes a user
  // message): converted again, in place of the stored conversion.
  if (dynamic.length > 0) {
    for (let d = dynamic.length - 1; d >= 0; d--) {
      const i = dynamic[d]!;
      messages.splice(starts[i]!, starts[i + 1]! - starts[i]!, ...toModelMessages([view[i]!], opts));
    }
  }
  const state: RequestState = {
    key,
    view,
    messages: all,
    starts,
    dynamic,
    problems,
    converted,
    seen,
    spent: false,
  };
  return { messages, problems: problems.slice(), state };
}
function optionsKey(opts: ToModelOptions): string {
  return [
    opts.stripMedia === true,
    opts.steer === true,
    opts.toolOutputCap ?? '',
    opts.resendsReasoning === true,
    opts.fileData !== undefined,
  ].join('|');
}

/** `prefix` is the start of `view`, message object for message object. */
function extendsView(prefix: readonly WithParts[], view: readonly WithParts[]): boolean {
  if (prefix.length > view.length) return false;
  for (let i = 0; i < prefix.length; i++) if (prefix[i] !== view[i]) return false;
  return true;
}

/** The message's conversion depends on the call's fetched bytes (an http(s) file part). */
function readsFileData(msg: WithParts, opts: ToModelOptions): boolean {
  if (opts.fileData === undefined || opts.stripMedia || msg.info.role !== 'user') return false;
  const bytes = opts.fileData;
  return msg.parts.some((p) => p.type === 'file' && (/^https?:/i.test(p.url) || bytes.has(p.id)));
}
