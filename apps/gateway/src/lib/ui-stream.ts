import type { Message, Part, SessionEvent } from '@loopline/core';

// Session events → AI SDK UI message stream chunks (the protocol of `useChat` and
// DefaultChatTransport, header `x-vercel-ai-ui-message-stream: v1`). Pure and stateful per
// stream: a turn's events become one assistant UI message; each Loopline assistant message is a
// step (start-step … finish-step); text and reasoning parts stream as deltas; tool parts become
// tool-input-available / tool-output-available (webhook and built-in tools are marked
// providerExecuted, client tools are not, so useChat's onToolCall runs for them); compactions and
// prunes are data parts, status changes transient data parts. The stream ends with finish when
// the session is idle or waits on client tools, with error then finish when the turn failed.

export type UIChunk = { type: string; [key: string]: unknown };

export interface UIStreamTranslator {
  /** Chunks for one event, and whether the turn is over (the stream should close after them). */
  push(event: SessionEvent): { chunks: UIChunk[]; done: boolean };
  /** The opening chunk. */
  start(): UIChunk[];
}

interface TextState {
  kind: 'text' | 'reasoning';
  sent: string;
  ended: boolean;
}

/** Creates a translator from session events to AI SDK UI message stream chunks. */
export function createUIStreamTranslator(opts: { clientTools: ReadonlySet<string> }): UIStreamTranslator {
  const steps = new Map<string, { open: boolean }>();
  /** User messages and summaries of the turn: their parts are not the reply. */
  const skipped = new Set<string>();
  const texts = new Map<string, TextState & { messageId: string }>();
  const tools = new Map<string, { input: boolean; output: boolean; client: boolean }>();
  let finishReason: string | undefined;

  const openStep = (messageId: string, out: UIChunk[]) => {
    if (steps.has(messageId)) return;
    steps.set(messageId, { open: true });
    out.push({ type: 'start-step' });
  };
  const closeStep = (messageId: string, out: UIChunk[]) => {
    const step = steps.get(messageId);
    if (!step?.open) return;
    for (const [id, t] of texts)
      if (t.messageId === messageId && !t.ended) {
        t.ended = true;
        out.push({ type: `${t.kind}-end`, id });
      }
    step.open = false;
    out.push({ type: 'finish-step' });
  };
  const textDelta = (
    messageId: string,
    id: string,
    kind: 'text' | 'reasoning',
    full: string | undefined,
    delta: string | undefined,
    out: UIChunk[],
  ) => {
    openStep(messageId, out);
    let t = texts.get(id);
    if (!t) {
      t = { kind, sent: '', ended: false, messageId };
      texts.set(id, t);
      out.push({ type: `${kind}-start`, id });
    }
    if (t.ended) return;
    const next = delta !== undefined ? delta : full?.startsWith(t.sent) ? full.slice(t.sent.length) : '';
    if (next.length === 0) return;
    t.sent += next;
    out.push({ type: `${kind}-delta`, id, delta: next });
  };
  const toolPart = (part: Extract<Part, { type: 'tool' }>, out: UIChunk[]) => {
    const state = part.state;
    const client = opts.clientTools.has(part.tool);
    const executed = client ? {} : { providerExecuted: true };
    const answered = state.status === 'completed' || state.status === 'error';
    let t = tools.get(part.callId);
    if (!t) {
      t = { input: false, output: false, client };
      tools.set(part.callId, t);
      openStep(part.messageId, out);
      // A client call first seen answered is the continuation after addToolOutput: the UI message
      // already holds the call, and announcing it again would run onToolCall twice.
      if (client && answered) t.input = true;
      else out.push({ type: 'tool-input-start', toolCallId: part.callId, toolName: part.tool, ...executed });
    }
    if (!t.input && (state.status !== 'pending' || Object.keys(state.input).length > 0)) {
      t.input = true;
      out.push({
        type: 'tool-input-available',
        toolCallId: part.callId,
        toolName: part.tool,
        input: state.input,
        ...executed,
      });
    }
    if (t.output) return;
    if (state.status === 'completed') {
      t.output = true;
      out.push({ type: 'tool-output-available', toolCallId: part.callId, output: state.output, ...executed });
    } else if (state.status === 'error') {
      t.output = true;
      out.push({ type: 'tool-output-error', toolCallId: part.callId, errorText: state.error, ...executed });
    }
  };
  const finishOf = (message: Message) => {
    if (message.role !== 'assistant') return;
    if (message.finish) finishReason = message.finish;
  };
  const closeAll = (out: UIChunk[]) => {
    for (const id of steps.keys()) closeStep(id, out);
  };
  const UI_FINISH = new Set(['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other']);

  return {
    start: () => [{ type: 'start' }],
    push(event) {
      const out: UIChunk[] = [];
      switch (event.type) {
        case 'message.updated': {
          const m = event.message;
          if (m.role !== 'assistant' || m.summary) {
            skipped.add(m.id);
            break;
          }
          openStep(m.id, out);
          finishOf(m);
          if (m.time.completed !== undefined || m.error) closeStep(m.id, out);
          break;
        }
        case 'part.updated': {
          const p = event.part;
          if (skipped.has(p.messageId)) break;
          if (p.type === 'text' && !p.ignored) textDelta(p.messageId, p.id, 'text', p.text, undefined, out);
          else if (p.type === 'reasoning') textDelta(p.messageId, p.id, 'reasoning', p.text, undefined, out);
          else if (p.type === 'tool') toolPart(p, out);
          break;
        }
        case 'event.clipped': {
          // A tool part too large for the event stream (core EVENT_MAX_BYTES): its call, already
          // shown, is closed with where to read the output instead of waiting forever.
          if (event.partType !== 'tool' || !event.callId || !event.messageId || skipped.has(event.messageId))
            break;
          const t = tools.get(event.callId);
          if (!t || t.output || (event.status !== 'completed' && event.status !== 'error')) break;
          t.output = true;
          out.push({
            type: 'tool-output-available',
            toolCallId: event.callId,
            output: `[${event.bytes} bytes, too large for the event stream: read the part from GET /v1/sessions/:id/messages]`,
            ...(t.client ? {} : { providerExecuted: true }),
          });
          break;
        }
        case 'part.delta':
          if (skipped.has(event.messageId)) break;
          textDelta(
            event.messageId,
            event.partId,
            event.field === 'text' ? 'text' : 'reasoning',
            undefined,
            event.delta,
            out,
          );
          break;
        case 'session.compacted':
          out.push({
            type: 'data-compaction',
            id: event.compactionId,
            data: {
              auto: event.auto,
              rung: event.rung,
              tokensBefore: event.tokensBefore,
              tokensAfter: event.tokensAfter,
            },
          });
          break;
        case 'session.pruned':
          out.push({
            type: 'data-pruned',
            data: { parts: event.parts, tokens: event.tokens },
            transient: true,
          });
          break;
        case 'session.status':
          out.push({
            type: 'data-status',
            data: { status: event.status, ...(event.detail ? { detail: event.detail } : {}) },
            transient: true,
          });
          // Waiting on client tools ends the stream (useChat runs onToolCall, then posts the
          // results); waiting on a subagent does not.
          if (
            (event.status === 'waiting' && event.detail?.includes('client tool')) ||
            event.status === 'idle'
          ) {
            closeAll(out);
            out.push({
              type: 'finish',
              finishReason: event.status === 'waiting' ? 'tool-calls' : finishReasonOf(finishReason),
            });
            return { chunks: out, done: true };
          }
          break;
        case 'session.error':
          closeAll(out);
          out.push({ type: 'error', errorText: event.error.message });
          return { chunks: out, done: true };
        case 'session.idle':
          closeAll(out);
          out.push({ type: 'finish', finishReason: finishReasonOf(finishReason) });
          return { chunks: out, done: true };
        default:
          break;
      }
      return { chunks: out, done: false };
    },
  };

  function finishReasonOf(reason: string | undefined): string {
    return reason && UI_FINISH.has(reason) ? reason : 'stop';
  }
}
