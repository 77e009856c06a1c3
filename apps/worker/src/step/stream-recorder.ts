import type { ReasoningPart, TextPart, Tokenizer, ToolPart } from '@loopline/core';
import { countPart, newId } from '@loopline/core';
import { insertPart, updatePart } from '@loopline/db';
import type { SessionWriter } from '../session-writer.ts';

// Turns the model stream into persisted parts as it arrives: a part row is written when a
// text/reasoning block or a tool call starts, deltas go to the event stream at once and to
// PostgreSQL at most every FLUSH_MS (so a crash keeps the partial text), and the final text
// is written with its token count when the block ends.

const FLUSH_MS = 1_000;

type Streaming = TextPart | ReasoningPart;

export class StreamRecorder {
  private readonly open = new Map<string, { part: Streaming; dirty: boolean }>();
  readonly tools: ToolPart[] = [];
  /** Ids of the text and reasoning parts written, in order (a discarded summary attempt ignores them). */
  readonly written: string[] = [];
  private lastFlush = Date.now();
  private readonly writer: SessionWriter;
  private readonly messageId: string;
  private readonly tokenizer: Tokenizer;

  constructor(writer: SessionWriter, messageId: string, tokenizer: Tokenizer) {
    this.writer = writer;
    this.messageId = messageId;
    this.tokenizer = tokenizer;
  }

  private base() {
    return { id: newId('prt'), sessionId: this.writer.ctx.sessionId, messageId: this.messageId, tokens: 0 };
  }

  async start(streamId: string, kind: 'text' | 'reasoning'): Promise<void> {
    const part: Streaming =
      kind === 'text'
        ? { ...this.base(), type: 'text', text: '' }
        : { ...this.base(), type: 'reasoning', text: '' };
    this.open.set(streamId, { part, dirty: false });
    this.written.push(part.id);
    await this.writer.write(async (trx, emit) => {
      await insertPart(trx, this.writer.ctx.tenantId, part);
      emit({ type: 'part.updated', part });
    });
  }

  async delta(streamId: string, text: string): Promise<void> {
    const entry = this.open.get(streamId);
    if (!entry) return;
    entry.part = { ...entry.part, text: entry.part.text + text };
    entry.dirty = true;
    await this.writer.publish([
      {
        type: 'part.delta',
        messageId: this.messageId,
        partId: entry.part.id,
        field: entry.part.type === 'text' ? 'text' : 'reasoning',
        delta: text,
      },
    ]);
    if (Date.now() - this.lastFlush >= FLUSH_MS) await this.flush();
  }

  async end(streamId: string): Promise<void> {
    const entry = this.open.get(streamId);
    if (!entry) return;
    this.open.delete(streamId);
    const part = countPart(entry.part, this.tokenizer);
    await this.writer.write(async (trx, emit) => {
      await updatePart(trx, this.writer.ctx.tenantId, part);
      emit({ type: 'part.updated', part });
    });
  }

  /** Ends every block still open (a stream that stopped without its end events). */
  async endAll(): Promise<void> {
    for (const id of [...this.open.keys()]) await this.end(id);
  }

  private async flush(): Promise<void> {
    this.lastFlush = Date.now();
    const dirty = [...this.open.values()].filter((e) => e.dirty);
    if (dirty.length === 0) return;
    await this.writer.write(async (trx) => {
      for (const e of dirty) {
        await updatePart(trx, this.writer.ctx.tenantId, e.part);
        e.dirty = false;
      }
    });
  }

  async toolCall(
    callId: string,
    tool: string,
    input: Record<string, unknown>,
    invalid?: { raw: string; error: string },
  ): Promise<void> {
    const now = Date.now();
    const state: ToolPart['state'] = invalid
      ? { status: 'error', input, error: invalid.error, time: { start: now, end: now } }
      : { status: 'pending', input };
    const draft: ToolPart = { ...this.base(), type: 'tool', callId, tool, state };
    const part = countPart(draft, this.tokenizer);
    this.tools.push(part);
    await this.writer.write(async (trx, emit) => {
      await insertPart(trx, this.writer.ctx.tenantId, part);
      emit({ type: 'part.updated', part });
    });
  }
}
