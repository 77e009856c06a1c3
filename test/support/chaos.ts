import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { COMPACTION_SYSTEM_PROMPT } from '@loopline/core';
import { closeDb, createDb, type Db } from '@loopline/db';
import type { ReplyInput, ScenarioInput } from '@loopline/mock-llm';
import { TITLE_SYSTEM_PROMPT } from '@loopline/worker';
import type { Job } from 'bullmq';
import { sql } from 'kysely';
import { processors } from '../../apps/worker/src/worker.ts';
import { type FaultToolServer, startFaultToolServer } from './fault-tools.ts';
import { installFenceAudit } from './fence-audit.ts';
import {
  checkInvariants,
  type InvariantReport,
  type SessionExpectation,
  type Violation,
} from './invariants.ts';
import { busyJobs } from './jobs.ts';
import { type LlmProxy, startLlmProxy } from './llm-proxy.ts';
import { faultLogDir } from './log-dirs.ts';
import { type Crash, WORKER_APP_PREFIX, WorkerPool, type WorkerProc } from './procs.ts';
import { type Client, type Stack, startStack } from './stack.ts';
import { sleep } from './wait.ts';

// The fault harness: many sessions (tool calls, streams, small context windows so
// they prune and compact) driven through real worker processes, while a "monkey" inflicts faults
// at random points — SIGKILL mid-tool / mid-stream / mid-compaction / mid-prune (a new worker is
// started in each killed one's place), SIGSTOP past the lock TTL then SIGCONT, and
// pg_terminate_backend of the workers' connections to the test database — the mock model answers with
// 429s, 500s, cut streams, malformed tool arguments, unknown tools and context-length errors, and
// the driver hits the gateway with duplicate and concurrent POSTs and malformed or oversized
// bodies. Afterwards the invariants (invariants.ts) are checked in PostgreSQL, in the tool
// server's own log and in the model view, and a summary table is printed.
//
// The same harness is the CI fault test (50 sessions, one to two minutes) and the soak
// (SOAK_MINUTES=N, scripts/soak.sh: new sessions keep starting for N minutes).

/** The first words of the title job's system prompt. */
export const TITLE_PHRASE = TITLE_SYSTEM_PROMPT.slice(0, TITLE_SYSTEM_PROMPT.indexOf(':'));

/** The first line of the compaction agent's system prompt: every summary request carries it. */
export const SUMMARY_PHRASE = COMPACTION_SYSTEM_PROMPT.split('\n')[0]!;

export type ModelFault =
  | 'rate-limit'
  | 'server-error'
  | 'cut-stream'
  | 'malformed-tool-args'
  | 'unknown-tool'
  | 'context-length';
export type GatewayFault =
  | 'duplicate-concurrent'
  | 'duplicate-replay'
  | 'key-conflict'
  | 'malformed'
  | 'concurrent-turns';
export type ProcessFault =
  | 'kill:mid-tool'
  | 'kill:mid-stream'
  | 'kill:mid-compaction'
  | 'kill:mid-prune'
  | 'freeze'
  | 'pg-terminate';

export interface ChaosConfig {
  /** Sessions to run (the soak starts more until durationMs has passed). */
  sessions: number;
  /** Soak: keep starting sessions for this long (0: run `sessions` once). */
  durationMs: number;
  workers: number;
  /** Sessions in flight at once. */
  concurrency: number;
  /** Small context windows, big tool outputs and context-length faults (needs the compact and prune processors). */
  compaction: boolean;
  seed: number;
  processFaults: ProcessFault[];
  modelFaults: boolean;
  gatewayFaults: boolean;
  /** Pause between two process faults, ms [min, max]. */
  faultIntervalMs: [number, number];
  /** A process fault waits until every worker has been up this long… */
  minUptimeMs: number;
  /** …and until this many more turns were answered since the previous process fault. */
  progressPerFault: number;
  /** Session lock TTL and BullMQ job lock of the workers. */
  lockMs: number;
  stalledMs: number;
  /** A turn that is not answered in this long is reported stuck. */
  turnTimeoutMs: number;
  /** After the driver: how long sessions and queues get to settle. */
  settleTimeoutMs: number;
  /**
   * The workers' reconciler period (LOOPLINE_RECONCILE_INTERVAL_MS; FAULT_RECONCILE_MS, default
   * 1000): it re-wakes orphaned sessions (status queued/running/compacting, no pending job, no lock).
   * 0 turns it off, and then any orphaned session is a violation (to hunt what causes orphans).
   */
  reconcileMs: number;
  redisUrl?: string;
  log?: (line: string) => void;
}

/** The worker has the compaction and prune processors (the other half of context management). */
export function workerCompacts(): boolean {
  const forced = process.env.FAULTS_COMPACTION;
  if (forced === '1' || forced === 'true') return true;
  if (forced === '0' || forced === 'false') return false;
  return Boolean(processors.compact && processors.prune);
}

/** The chaos run's configuration: defaults, SOAK_MINUTES and the overrides. */
export function chaosConfig(overrides: Partial<ChaosConfig> = {}): ChaosConfig {
  const soakMinutes = Number(process.env.SOAK_MINUTES ?? 0);
  const compaction = workerCompacts();
  const processFaults: ProcessFault[] = ['kill:mid-tool', 'kill:mid-stream', 'freeze', 'pg-terminate'];
  if (compaction) processFaults.push('kill:mid-compaction', 'kill:mid-prune');
  return {
    sessions: Number(process.env.FAULT_SESSIONS ?? 50),
    durationMs: soakMinutes * 60_000,
    workers: Number(process.env.FAULT_WORKERS ?? 3),
    concurrency: Number(process.env.FAULT_CONCURRENCY ?? 50),
    compaction,
    seed: Number(process.env.FAULT_SEED ?? Math.floor(Math.random() * 2 ** 31)),
    processFaults,
    modelFaults: true,
    gatewayFaults: true,
    faultIntervalMs: [200, 900],
    minUptimeMs: 2000,
    progressPerFault: Number(process.env.FAULT_PROGRESS ?? 3),
    lockMs: 2000,
    stalledMs: 1000,
    reconcileMs: Number(process.env.FAULT_RECONCILE_MS ?? 1000),
    turnTimeoutMs: 120_000,
    settleTimeoutMs: 120_000,
    ...overrides,
  };
}

// ---------------------------------------------------------------------------------------------
// The plan: sessions, their turns, and the mock scenario that answers them.

/** mulberry32: a small seeded PRNG, so a failing run can be replayed with FAULT_SEED. */
export function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
    chance: (p: number) => next() < p,
  };
}

type Content = 'plain' | 'stream' | 'lookup' | 'slow' | 'both' | 'chain' | 'big' | 'long';

interface TurnPlan {
  text: string;
  content: Content;
  modelFault?: ModelFault;
  gatewayFault?: GatewayFault;
}

interface SessionPlan {
  index: number;
  turns: TurnPlan[];
}

const MARK: Record<Exclude<Content, 'plain'>, string> = {
  stream: '[stream]',
  lookup: '[tool:lookup]',
  slow: '[tool:slow]',
  both: '[tool:both]',
  chain: '[tool:chain]',
  big: '[tool:big]',
  long: '[long]',
};

/** About 2,500 tokens of user text that prune cannot clear: only a compaction makes room for it. */
const FILLER = Array.from(
  { length: 220 },
  (_, i) => `note ${i}: the quarterly figures for region ${i % 7} look stable`,
).join('; ');

/** How often a marked turn's first model call gets its fault (consecutive retryable errors stay below the worker's limit). */
const FAULT_TIMES: Record<ModelFault, number> = {
  'rate-limit': 2,
  'server-error': 2,
  'cut-stream': 1,
  'malformed-tool-args': 1,
  'unknown-tool': 1,
  'context-length': 1,
};

const faultMarker = (session: number, turn: number) => `#fault-s${session}-t${turn}#`;

function planSessions(cfg: ChaosConfig, count: number): SessionPlan[] {
  const r = rng(cfg.seed);
  const contents: Content[] = cfg.compaction
    ? ['plain', 'stream', 'lookup', 'slow', 'both', 'chain', 'big', 'big', 'long', 'long']
    : ['plain', 'stream', 'lookup', 'slow', 'both', 'chain'];
  const modelFaults: ModelFault[] = [
    'rate-limit',
    'server-error',
    'cut-stream',
    'malformed-tool-args',
    'unknown-tool',
  ];
  if (cfg.compaction) modelFaults.push('context-length');
  const gatewayFaults: GatewayFault[] = [
    'duplicate-concurrent',
    'duplicate-replay',
    'key-conflict',
    'malformed',
    'concurrent-turns',
  ];
  const plans: SessionPlan[] = [];
  for (let i = 0; i < count; i++) {
    const turns: TurnPlan[] = [];
    const n = cfg.compaction ? r.int(2, 4) : r.int(2, 3);
    for (let t = 1; t <= n; t++) {
      const content = r.pick(contents);
      const modelFault = cfg.modelFaults && r.chance(0.35) ? r.pick(modelFaults) : undefined;
      let gatewayFault = cfg.gatewayFaults && r.chance(0.3) ? r.pick(gatewayFaults) : undefined;
      if (gatewayFault === 'concurrent-turns' && t === n) gatewayFault = 'duplicate-replay';
      const words = [`[s${i}] turn ${t}:`, content === 'plain' ? '' : MARK[content]];
      if (modelFault) words.push(faultMarker(i, t));
      words.push('please help with the next item.');
      if (content === 'long') words.push(`Context: ${FILLER}.`);
      turns.push({ text: words.filter(Boolean).join(' '), content, modelFault, gatewayFault });
    }
    plans.push({ index: i, turns });
  }
  return plans;
}

function faultReply(kind: ModelFault): ReplyInput {
  switch (kind) {
    case 'rate-limit':
      return { fault: 'rate-limit', retryAfterSeconds: 0, retryAfterMs: 300 };
    case 'server-error':
      return { fault: 'server-error' };
    case 'cut-stream':
      return {
        fault: 'cut-stream',
        afterChunks: 4,
        text: 'a reply that the network cuts half way through '.repeat(4),
      };
    case 'malformed-tool-args':
      return { fault: 'malformed-tool-args', name: 'lookup' };
    case 'unknown-tool':
      return { fault: 'unknown-tool', name: 'no_such_tool' };
    case 'context-length':
      return { fault: 'context-length' };
  }
}

function buildScenario(plans: SessionPlan[]): ScenarioInput {
  const rules: NonNullable<ScenarioInput['rules']> = [
    // Compaction requests: a deterministic summary, streamed slowly enough to be killed mid-way.
    { when: { system: SUMMARY_PHRASE }, reply: { summary: true }, latencyMs: 8 },
    // Session titles (the worker's title job): never a fault, never a tool call.
    { when: { system: TITLE_PHRASE }, reply: { text: 'A session about the next item' } },
  ];
  for (const p of plans)
    p.turns.forEach((t, i) => {
      if (!t.modelFault) return;
      rules.push({
        when: { lastUserIncludes: faultMarker(p.index, i + 1), lastMessageRole: 'user' },
        reply: faultReply(t.modelFault),
        times: FAULT_TIMES[t.modelFault],
      });
    });
  const user = { lastMessageRole: 'user' } as const;
  rules.push(
    {
      when: { ...user, lastUserIncludes: MARK.lookup },
      reply: { toolCalls: [{ name: 'lookup', arguments: { topic: 'paris' } }] },
    },
    {
      when: { ...user, lastUserIncludes: MARK.slow },
      reply: { toolCalls: [{ name: 'slow', arguments: { ms: 1500 } }] },
    },
    {
      when: { ...user, lastUserIncludes: MARK.both },
      reply: {
        text: 'Running two tools.',
        toolCalls: [
          { name: 'lookup', arguments: { topic: 'tokyo' } },
          { name: 'slow', arguments: { ms: 1000 } },
        ],
      },
    },
    {
      when: { ...user, lastUserIncludes: MARK.chain },
      reply: { toolCalls: [{ name: 'lookup', arguments: { topic: 'rome' } }] },
    },
    {
      when: { lastMessageRole: 'tool', lastToolName: 'lookup', lastUserIncludes: MARK.chain },
      reply: { toolCalls: [{ name: 'slow', arguments: { ms: 800 } }] },
    },
    {
      when: { ...user, lastUserIncludes: MARK.big },
      reply: { toolCalls: [{ name: 'big', arguments: { lines: 400 } }] },
    },
    {
      when: { lastMessageRole: 'tool', lastToolName: 'big' },
      reply: { text: 'The table has many rows; the important ones are noted.' },
    },
    {
      when: { ...user, lastUserIncludes: MARK.long },
      reply: { text: 'Noted the context; the figures look stable.' },
    },
    {
      when: { ...user, lastUserIncludes: MARK.stream },
      reply: { text: 'a long streamed answer with many words '.repeat(8), chunks: 40 },
      latencyMs: 50,
    },
  );
  return { latencyMs: 5, rules };
}

// ---------------------------------------------------------------------------------------------
// HTTP with retries: a gateway request that fails because its PostgreSQL connection was
// terminated (500) or Redis is away (503) is retried, with the same Idempotency-Key.

interface HttpResult {
  status: number;
  body: any;
}

async function http(
  base: string,
  apiKey: string,
  method: string,
  urlPath: string,
  body?: unknown,
  headers: Record<string, string> = {},
  raw?: string,
): Promise<HttpResult> {
  const res = await fetch(`${base}${urlPath}`, {
    method,
    headers: {
      authorization: `Bearer ${apiKey}`,
      ...(body !== undefined || raw !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: raw ?? (body !== undefined ? JSON.stringify(body) : undefined),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed };
}

async function httpRetry(stats: Counter, ...args: Parameters<typeof http>): Promise<HttpResult> {
  let last: HttpResult | undefined;
  let error: unknown;
  for (let attempt = 0; attempt < 12; attempt++) {
    try {
      last = await http(...args);
      if (last.status < 500) return last;
    } catch (err) {
      error = err;
    }
    stats.bump('gateway retries (5xx / network)');
    await sleep(150 * (attempt + 1)); // the client's retry back-off
  }
  if (last) return last;
  throw error;
}

// ---------------------------------------------------------------------------------------------

class Counter {
  readonly counts = new Map<string, number>();
  bump(key: string, by = 1) {
    this.counts.set(key, (this.counts.get(key) ?? 0) + by);
  }
  get(key: string) {
    return this.counts.get(key) ?? 0;
  }
}

interface Progress {
  status: string;
  lastUser: number;
  lastAnswer: number;
  at: number;
}

/** One query for every session's progress, a few times a second (never through the gateway). */
class Poller {
  private readonly snapshot = new Map<string, Progress>();
  private timer: NodeJS.Timeout | undefined;
  private readonly ids = new Set<string>();
  private readonly db: Db;
  /** The poll running now: a tick while it runs adds none, refresh() waits for it. */
  private inFlight: Promise<void> | undefined;
  /** When the newest finished poll began (a failed one too: the stale count then tells). */
  private completedStart = 0;
  constructor(db: Db) {
    this.db = db;
  }
  watch(id: string) {
    this.ids.add(id);
  }
  watched(): string[] {
    return [...this.ids];
  }
  unwatch(id: string) {
    this.ids.delete(id);
  }
  start() {
    this.timer = setInterval(() => void this.poll(), 250);
  }
  stop() {
    clearInterval(this.timer);
  }
  get(id: string) {
    return this.snapshot.get(id);
  }
  /**
   * Returns once a poll begun after this call has finished: a poll in flight may have read its
   * rows before now, so it is waited out and another one run. However long a poll of many
   * sessions takes, the settle check then reads fresh rows.
   */
  async refresh(): Promise<void> {
    const after = Date.now();
    while (this.ids.size > 0 && this.completedStart < after) await this.poll();
  }
  /** Starts a poll, or returns the one in flight. */
  poll(): Promise<void> {
    if (this.inFlight || this.ids.size === 0) return this.inFlight ?? Promise.resolve();
    this.inFlight = this.pollOnce().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }
  private async pollOnce() {
    const at = Date.now();
    try {
      const { rows } = await sql<{
        id: string;
        status: string;
        last_user: string | null;
        last_answer: string | null;
      }>`
        select s.id, s.status,
          (select max(m.seq) from messages m where m.session_id = s.id and m.role = 'user'
             and coalesce((m.info->>'synthetic')::boolean, false) = false) as last_user,
          (select max(m.seq) from messages m where m.session_id = s.id and m.role = 'assistant'
             and m.info ? 'finish' and not m.info ? 'error'
             and m.info->>'finish' not in ('tool-calls', 'interrupted')
             and coalesce((m.info->>'summary')::boolean, false) = false
             and not exists (select 1 from parts p where p.message_id = m.id and p.type = 'tool')) as last_answer
        from sessions s where s.id = any(${[...this.ids]}::text[])`.execute(this.db);
      for (const r of rows)
        this.snapshot.set(r.id, {
          status: r.status,
          lastUser: Number(r.last_user ?? 0),
          lastAnswer: Number(r.last_answer ?? 0),
          at,
        });
    } catch {
      // the next poll tries again
    } finally {
      this.completedStart = at;
    }
  }
  /** Resolves when the session, as seen after `since`, is idle with its newest user turn answered, or in error. */
  async waitDone(id: string, since: number, timeoutMs: number): Promise<Progress | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const p = this.snapshot.get(id);
      if (p && p.at > since && ((p.status === 'idle' && p.lastAnswer > p.lastUser) || p.status === 'error'))
        return p;
      await sleep(100); // the poller refreshes snapshots; a soft deadline (undefined), not until()'s throw
    }
    return undefined;
  }
}

/**
 * A worker that crashed because PostgreSQL terminated a connection it had checked out: the bug
 * fixed in packages/db createDb (an 'error' listener on every node-postgres client; see
 * postgres-kill.test.ts). Named in the summary so a regression is recognised at a glance.
 */
export function isPgClientCrash(crash: Pick<Crash, 'stderr'>): boolean {
  return (
    crash.stderr.includes("Unhandled 'error' event") &&
    /Emitted 'error' event on Client instance at:\s+at Client\._handleErrorEvent \([^)]*pg\/lib\/client\.js/.test(
      crash.stderr,
    )
  );
}

function crashSummary(crashes: Crash[]): string {
  if (crashes.length === 0) return '0';
  const pg = crashes.filter(isPgClientCrash).length;
  return `${crashes.length}${pg ? ` (${pg} unhandled pg client error: createDb regression)` : ''}`;
}

/** Writes what a violating session went through (log, ledger, compaction runs, jobs, worker lines) to logDir. */
async function dumpSessions(
  db: Db,
  dir: string,
  violations: Violation[],
  jobs: Array<Job | undefined>,
  pool: WorkerPool,
): Promise<void> {
  const ids = [...new Set(violations.map((v) => v.sessionId).filter((id): id is string => !!id))].slice(
    0,
    20,
  );
  for (const id of ids) {
    const session = await db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst();
    const messages = await db
      .selectFrom('messages')
      .select(['id', 'seq', 'role', 'info'])
      .where('session_id', '=', id)
      .orderBy('seq')
      .execute();
    const parts = await db
      .selectFrom('parts')
      .select(['message_id', 'type', 'data', 'updated_at'])
      .where('session_id', '=', id)
      .orderBy('seq')
      .execute();
    const steps = await db
      .selectFrom('steps')
      .selectAll()
      .where('session_id', '=', id)
      .orderBy('started_at')
      .execute();
    const runs = await db
      .selectFrom('compactions')
      .selectAll()
      .where('session_id', '=', id)
      .orderBy('started_at')
      .execute();
    const sessionJobs = [];
    for (const j of jobs) {
      if (!j || j.data?.sessionId !== id) continue;
      sessionJobs.push({
        queue: j.queueName,
        id: j.id,
        state: await j.getState(),
        attemptsMade: j.attemptsMade,
        stalled: (j as unknown as { stalledCounter?: number }).stalledCounter,
        failedReason: j.failedReason,
        timestamp: j.timestamp,
        processedOn: j.processedOn,
        finishedOn: j.finishedOn,
        delay: j.delay,
      });
    }
    const lines = pool.procs.flatMap((p) =>
      p.lines.filter((l) => JSON.stringify(l).includes(id)).map((l) => ({ worker: p.n, ...l })),
    );
    const dump = {
      violations: violations.filter((v) => v.sessionId === id),
      session,
      messages: messages.map((m) => ({
        seq: m.seq,
        role: m.role,
        info: m.info,
        parts: parts
          .filter((p) => p.message_id === m.id)
          .map((p) => ({ type: p.type, updated: p.updated_at, ...(p.data as object) })),
      })),
      steps,
      compactions: runs,
      jobs: sessionJobs,
      workerLog: lines,
    };
    await writeFile(path.join(dir, `session-${id}.json`), JSON.stringify(dump, null, 2));
  }
}

export interface ChaosResult {
  config: ChaosConfig;
  violations: Violation[];
  report: InvariantReport;
  table: string;
  logDir: string;
}

/** Runs the chaos harness: sessions under random faults, then the invariants. */
export async function runChaos(cfg: ChaosConfig): Promise<ChaosResult> {
  const log = cfg.log ?? (() => undefined);
  const debug = process.env.FAULT_DEBUG ? log : () => undefined;
  const started = Date.now();
  // A soak plans up to 10 sessions a second: enough that it runs out of time, not of sessions (at
  // 2 a second a faster step finished a 10-minute soak's 1,250 sessions in under 7 minutes).
  const maxSessions = cfg.durationMs > 0 ? cfg.sessions + Math.ceil(cfg.durationMs / 100) : cfg.sessions;
  const plans = planSessions(cfg, maxSessions);
  const harness: Violation[] = [];
  const orphans: Array<{ sessionId: string; status: string; at: number }> = [];
  const faults = new Counter();
  const misses = new Counter();
  const stats = new Counter();

  const stack: Stack = await startStack({
    workers: false,
    scenario: buildScenario(plans),
    ...(cfg.redisUrl ? { redisUrl: cfg.redisUrl } : {}),
  });
  const admin = createDb(stack.databaseUrl, { applicationName: 'fault-admin', max: 6 });
  let tools: FaultToolServer | undefined;
  let proxy: LlmProxy | undefined;
  let pool: WorkerPool | undefined;
  const poller = new Poller(admin);
  const modelFaultCounts = new Counter();
  let modelCalls = 0;
  const tallyModelCalls = () => {
    const faultKinds = [
      'rate-limit',
      'server-error',
      'cut-stream',
      'malformed-tool-args',
      'unknown-tool',
      'context-length',
      'context-window',
    ];
    for (const c of stack.mock.calls.splice(0)) {
      modelCalls++;
      if (faultKinds.includes(c.reply)) modelFaultCounts.bump(`model: ${c.reply}`);
    }
    const old = Date.now() - 30_000;
    if (proxy)
      proxy.log.splice(
        0,
        proxy.log.length,
        ...proxy.log.filter((r) => r.endedAt === undefined || r.endedAt > old),
      );
    if (tools)
      tools.log.splice(
        0,
        tools.log.length,
        ...tools.log.filter((r) => r.endedAt === undefined || r.endedAt > old),
      );
  };
  let turnsDone = 0;
  let reconcilerOn = false;
  let monkeyOn = false;
  const logDir = faultLogDir(stack.namespace);
  try {
    await installFenceAudit(admin);
    tools = await startFaultToolServer();
    proxy = await startLlmProxy(stack.mock.url, SUMMARY_PHRASE);
    const client: Client = await stack.tenant('chaos');
    const schema = (props: Record<string, unknown>) => ({ type: 'object', properties: props }) as const;
    await client.tool('lookup', {
      kind: 'webhook',
      description: 'Look up facts about a topic',
      inputSchema: schema({ topic: { type: 'string' } }),
      url: `${tools.url}/lookup`,
      timeoutMs: 10_000,
    });
    await client.tool('slow', {
      kind: 'webhook',
      description: 'A slow job',
      inputSchema: schema({ ms: { type: 'number' } }),
      url: `${tools.url}/slow`,
      timeoutMs: 10_000,
    });
    await client.tool('big', {
      kind: 'webhook',
      description: 'A big table',
      inputSchema: schema({ lines: { type: 'number' } }),
      url: `${tools.url}/big`,
      timeoutMs: 10_000,
    });
    await client.agent('chaos', {
      tools: ['lookup', 'slow', 'big'],
      // Interrupted steps count against maxSteps (see the report): leave room for the faults.
      maxSteps: 25,
      ...(cfg.compaction
        ? {
            limits: { context: 8000, output: 1000 },
            compaction: {
              maxIterations: 3,
              tailTurns: 1,
              pruneProtect: 1500,
              pruneMinimum: 200,
              backgroundDelayMs: 600_000,
            },
          }
        : {}),
    });

    pool = new WorkerPool(
      {
        databaseUrl: stack.databaseUrl,
        redisUrl: stack.redisUrl,
        namespace: stack.namespace,
        llmUrl: proxy.url,
        lockMs: cfg.lockMs,
        stalledMs: cfg.stalledMs,
        extra: {
          LOOPLINE_MAX_PROVIDER_RETRIES: '8',
          // The harness kills workers mid-step on purpose, many times: keep the crash-loop cap out of the way.
          LOOPLINE_MAX_INTERRUPTED_STEPS: '20',
          LOOPLINE_RECONCILE_INTERVAL_MS: String(cfg.reconcileMs),
          LOOPLINE_RECONCILE_AFTER_MS: String(2 * cfg.lockMs),
        },
      },
      logDir,
    );
    for (let i = 0; i < cfg.workers; i++) pool.start();
    pool.supervise = true;
    poller.start();

    // ---- the driver
    const expectations: SessionExpectation[] = [];
    const base = stack.url;
    const key = client.apiKey;
    const post = (sid: string, text: string, idem: string) =>
      httpRetry(
        stats,
        base,
        key,
        'POST',
        `/v1/sessions/${sid}/messages`,
        { text },
        { 'idempotency-key': idem },
      );

    const acceptOne = async (exp: SessionExpectation, turn: TurnPlan, idem: string): Promise<void> => {
      const sid = exp.sessionId;
      const v = (message: string) => harness.push({ invariant: 'gateway', sessionId: sid, message });
      const g = turn.gatewayFault;
      if (g === 'malformed') {
        const bad: Array<[string, string, number[]]> = [
          ['invalid JSON', '{"text": "unterminated', [400]],
          ['text is a number', JSON.stringify({ text: 5 }), [400]],
          ['empty text', JSON.stringify({ text: '' }), [400]],
          ['unknown field', JSON.stringify({ text: 'x', bogus: true }), [400]],
          ['oversized body', JSON.stringify({ text: 'x'.repeat(2.5 * 1024 * 1024) }), [413]],
        ];
        for (const [what, raw, expected] of bad) {
          const res = await httpRetry(
            stats,
            base,
            key,
            'POST',
            `/v1/sessions/${sid}/messages`,
            undefined,
            { 'idempotency-key': `${idem}-bad` },
            raw,
          );
          faults.bump(`gateway: ${what}`);
          if (!expected.includes(res.status))
            v(`${what}: answered ${res.status}, expected ${expected.join('|')}`);
        }
      }
      let responses: HttpResult[];
      if (g === 'duplicate-concurrent') {
        faults.bump('gateway: duplicate POSTs (same key, concurrent)');
        responses = await Promise.all([
          post(sid, turn.text, idem),
          post(sid, turn.text, idem),
          post(sid, turn.text, idem),
        ]);
      } else {
        responses = [await post(sid, turn.text, idem)];
        if (g === 'duplicate-replay') {
          faults.bump('gateway: duplicate POST (same key, replayed later)');
          await sleep(300); // on purpose: the replay comes later than the first POST
          responses.push(await post(sid, turn.text, idem));
        }
      }
      const ids = new Set<string>();
      for (const r of responses) {
        if (r.status !== 202) v(`POST answered ${r.status}: ${JSON.stringify(r.body).slice(0, 200)}`);
        else ids.add(r.body.message.info.id);
      }
      if (ids.size > 1) v(`duplicate POSTs with one Idempotency-Key got ${ids.size} different message ids`);
      const [id] = ids;
      if (id) exp.accepted.push(id);
      if (g === 'key-conflict') {
        faults.bump('gateway: same key, another body');
        const res = await post(sid, `${turn.text} (changed)`, idem);
        if (res.status !== 409)
          v(`same Idempotency-Key with another body answered ${res.status}, expected 409`);
      }
    };

    const runSession = async (plan: SessionPlan) => {
      const created = await httpRetry(stats, base, key, 'POST', '/v1/sessions', { agent: 'chaos' });
      if (created.status !== 201) {
        harness.push({ invariant: 'gateway', message: `session create answered ${created.status}` });
        return;
      }
      const exp: SessionExpectation = { tenantId: client.tenantId, sessionId: created.body.id, accepted: [] };
      expectations.push(exp);
      poller.watch(exp.sessionId);
      for (let t = 0; t < plan.turns.length; t++) {
        const turn = plan.turns[t]!;
        const since = Date.now();
        if (turn.gatewayFault === 'concurrent-turns' && plan.turns[t + 1]) {
          faults.bump('gateway: concurrent POSTs to one session');
          const nextTurn = plan.turns[t + 1]!;
          await Promise.all([
            acceptOne(exp, turn, `k-${plan.index}-${t}`),
            acceptOne(exp, { ...nextTurn, gatewayFault: undefined }, `k-${plan.index}-${t + 1}`),
          ]);
          t++;
        } else await acceptOne(exp, turn, `k-${plan.index}-${t}`);
        const done = await poller.waitDone(exp.sessionId, Math.max(since, Date.now()), cfg.turnTimeoutMs);
        if (done) turnsDone++;
        if (!done) {
          harness.push({
            invariant: 'end-state',
            sessionId: exp.sessionId,
            message: `turn ${t + 1} not answered within ${cfg.turnTimeoutMs} ms (status ${poller.get(exp.sessionId)?.status})`,
          });
          return;
        }
      }
      poller.unwatch(exp.sessionId); // watched again when the run settles
    };

    // ---- the monkey
    monkeyOn = true;
    let frozen: WorkerProc | undefined;
    const replace = (p: WorkerProc) => {
      pool!.start();
      debug(`  fault: worker ${p.n} (pid ${p.pid}) killed, worker ${pool!.procs.at(-1)!.n} started`);
    };
    const runningOwner = (port: number) => {
      const p = pool!.ownerOfPort(port);
      return p && !p.stopped ? p : undefined;
    };
    const findTarget = async (
      candidates: () => number[],
      timeoutMs: number,
    ): Promise<WorkerProc | undefined> => {
      const deadline = Date.now() + timeoutMs;
      while (monkeyOn && Date.now() < deadline) {
        for (const port of candidates()) {
          const p = runningOwner(port);
          if (p) return p;
        }
        await sleep(40); // polls for a target while the monkey is on; gives up (undefined) at the deadline
      }
      return undefined;
    };
    const midTool = () =>
      tools!
        .inFlight()
        .filter((r) => Date.now() - r.startedAt > 100)
        .map((r) => r.remotePort);
    const midStream = () =>
      proxy!
        .streaming()
        .filter((r) => !r.summary)
        .map((r) => r.remotePort);
    const midSummary = () =>
      proxy!.log.filter((r) => r.summary && r.endedAt === undefined).map((r) => r.remotePort);

    /** The session's jobs that are running right now, in every queue. */
    const activeJobsOf = async (sid: string) => {
      const out: string[] = [];
      for (const q of stack.deps.queues.all())
        for (const j of await q.getActive(0, 200)) if (j?.data?.sessionId === sid) out.push(q.name);
      return out;
    };
    const killMidPrune = async (): Promise<boolean> => {
      const deadline = Date.now() + 4000;
      while (monkeyOn && Date.now() < deadline) {
        // A prune job about to run (queued, delayed by lock contention) or running: hold its
        // session row, so it blocks inside a fenced write (acquireFence or its first withFence)
        // and pg_blocking_pids names the worker process (application_name) that is mid-prune.
        const jobs = await stack.deps.queues.prune.getJobs(
          ['active', 'wait', 'prioritized', 'delayed'],
          0,
          20,
        );
        const sid = jobs.find((j) => j?.data?.sessionId)?.data?.sessionId as string | undefined;
        if (sid) {
          let killed = false;
          await admin.transaction().execute(async (trx) => {
            const me = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]!.pid;
            await sql`select 1 from sessions where id = ${sid} for update`.execute(trx);
            const until = Date.now() + 2000;
            while (monkeyOn && Date.now() < until) {
              const { rows } = await sql<{ app: string }>`
                select application_name as app from pg_stat_activity
                where ${me}::int = any(pg_blocking_pids(pid)) and application_name like ${`${WORKER_APP_PREFIX}%`}`.execute(
                admin,
              );
              if (rows.length > 0) {
                // Only the holder of the session lease writes: when the session's one running job
                // is its prune job, the blocked worker is the one running it.
                const active = await activeJobsOf(sid);
                const n = Number(rows[0]!.app.slice(WORKER_APP_PREFIX.length));
                const p = pool!.procs.find((w) => w.n === n && w.alive && !w.stopped);
                if (
                  rows.length === 1 &&
                  p &&
                  active.length === 1 &&
                  active[0] === stack.deps.queues.prune.name
                ) {
                  await pool!.kill(p);
                  replace(p);
                  killed = true;
                }
                break;
              }
              await sleep(25); // polls the tool / stream for its kill moment
            }
          });
          if (killed) return true;
        }
        await sleep(30); // polls for a target while the monkey is on
      }
      return false;
    };

    const inflict = async (kind: ProcessFault): Promise<boolean> => {
      switch (kind) {
        case 'kill:mid-tool':
        case 'kill:mid-stream':
        case 'kill:mid-compaction': {
          const source =
            kind === 'kill:mid-tool' ? midTool : kind === 'kill:mid-stream' ? midStream : midSummary;
          const p = await findTarget(source, kind === 'kill:mid-compaction' ? 6000 : 2500);
          if (!p) return false;
          await pool!.kill(p);
          replace(p);
          return true;
        }
        case 'kill:mid-prune':
          return killMidPrune();
        case 'freeze': {
          if (frozen || pool!.running.length < 2) return false;
          const p = await findTarget(() => [...midTool(), ...midStream()], 2500);
          if (!p) return false;
          frozen = p;
          pool!.stop(p);
          debug(`  fault: worker ${p.n} frozen`);
          const freezeMs = 2 * cfg.lockMs + cfg.stalledMs + 1500;
          setTimeout(() => {
            pool!.cont(p);
            frozen = undefined;
            debug(`  fault: worker ${p.n} thawed`);
          }, freezeMs);
          return true;
        }
        case 'pg-terminate': {
          // The worker processes' connections. (The gateway runs inside this test process, and a
          // connection terminated while checked out crashes a node-postgres process: see
          // postgres-kill.test.ts.)
          const { rows } = await sql<{ n: string }>`
            select count(pg_terminate_backend(pid)) as n from pg_stat_activity
            where datname = current_database() and application_name like ${`${WORKER_APP_PREFIX}%`}`.execute(
            admin,
          );
          stats.bump('PostgreSQL backends terminated', Number(rows[0]?.n ?? 0));
          return true;
        }
      }
    };

    // The next process fault waits until every worker slot is filled by a process that has been
    // up for a while: faults then come at random points but never faster than the system can
    // replace what it lost (on a loaded 2-core machine a worker takes a second or two to boot).
    // It also waits for progress: `progressPerFault` more turns answered since the previous one.
    // So the rate of faults follows the speed of the machine (a loaded CI box, a fast laptop) and
    // the run always moves forward, however slow each step is.
    let turnsAtLastFault = 0;
    const recovered = async () => {
      while (monkeyOn) {
        const up = pool!.alive.filter((p) => Date.now() - p.startedAt >= cfg.minUptimeMs);
        if (up.length >= cfg.workers && turnsDone - turnsAtLastFault >= cfg.progressPerFault) {
          turnsAtLastFault = turnsDone;
          return;
        }
        await sleep(100); // waits while the monkey is on, for workers up and enough progress
      }
    };
    const monkey = async () => {
      const r = rng(cfg.seed ^ 0x5eed);
      let round: ProcessFault[] = [];
      while (monkeyOn) {
        await sleep(r.int(cfg.faultIntervalMs[0], cfg.faultIntervalMs[1])); // on purpose: the fault pace
        await recovered();
        if (!monkeyOn || cfg.processFaults.length === 0) break;
        // Every kind once per round, in a random order: a short CI run still covers them all.
        if (round.length === 0) round = [...cfg.processFaults].sort(() => r.next() - 0.5);
        const kind = round.pop()!;
        try {
          if (await inflict(kind)) faults.bump(kind);
          else misses.bump(kind);
        } catch (err) {
          misses.bump(kind);
          log(`  fault ${kind} failed: ${(err as Error).message}`);
        }
      }
    };

    log(
      `chaos: seed ${cfg.seed}, ${cfg.workers} workers, compaction ${cfg.compaction ? 'on' : 'off'}, logs in ${logDir}`,
    );
    const monkeyDone = monkey();

    // ---- the orphan watch. A session whose status says work is under way (queued/running/
    // compacting) while no job of it is pending and no runner holds its lock, for 2 lock TTLs, is
    // orphaned (see orphaned-session.test.ts, redis-restart.test.ts): the workers' reconciler
    // (apps/worker/src/reconcile.ts) must re-wake it. The harness only watches: an orphan counts as
    // seen, and as a violation if the reconciler has not moved it a few periods later (or at once
    // with the reconciler off, cfg.reconcileMs = 0).
    const orphanSince = new Map<string, number>();
    const reported = new Set<string>();
    const orphanAfter = 2 * cfg.lockMs + 1000;
    const unhealedAfter =
      cfg.reconcileMs > 0 ? orphanAfter + 2 * cfg.lockMs + 3 * cfg.reconcileMs + 5000 : orphanAfter;
    reconcilerOn = true;
    const reconciler = async () => {
      while (reconcilerOn) {
        await sleep(1000); // the check's pace
        const busy = poller
          .watched()
          .filter((id) => ['queued', 'running', 'compacting'].includes(poller.get(id)?.status ?? ''));
        for (const sid of orphanSince.keys()) if (!busy.includes(sid)) orphanSince.delete(sid);
        if (busy.length === 0) continue;
        try {
          const pending = new Set<string>();
          for (const q of stack.deps.queues.all())
            for (const j of await q.getJobs(
              ['active', 'wait', 'delayed', 'prioritized', 'waiting-children'],
              0,
              10_000,
            ))
              if (j?.data?.sessionId) pending.add(j.data.sessionId);
          for (const sid of busy) {
            if (pending.has(sid) || (await stack.deps.redis.exists(stack.deps.keys.lock(sid)))) {
              orphanSince.delete(sid);
              continue;
            }
            const first = orphanSince.get(sid) ?? Date.now();
            orphanSince.set(sid, first);
            const age = Date.now() - first;
            if (age >= orphanAfter && !orphans.some((o) => o.sessionId === sid && o.at >= first - started)) {
              orphans.push({ sessionId: sid, status: poller.get(sid)?.status ?? '?', at: first - started });
              debug(`  orphaned session ${sid} (status ${poller.get(sid)?.status})`);
            }
            if (age >= unhealedAfter && !reported.has(sid)) {
              reported.add(sid);
              harness.push({
                invariant: 'end-state',
                sessionId: sid,
                message:
                  `orphaned at ${Math.round((first - started) / 1000)} s and not re-woken ${Math.round(age / 1000)} s later: ` +
                  `status ${poller.get(sid)?.status}, no pending job, no lock holder (reconciler ${cfg.reconcileMs > 0 ? 'on' : 'off'})`,
              });
            }
          }
        } catch (err) {
          debug(`  orphan watch: ${(err as Error).message}`);
        }
      }
    };
    const reconcilerDone = reconciler();

    // ---- housekeeping, so a soak of hours keeps its memory flat: the mock's recorded calls
    // (request bodies included) are tallied and dropped, finished proxy and tool records trimmed.
    const housekeeping = setInterval(tallyModelCalls, 5000);
    let nextPlan = 0;
    const lane = async () => {
      while (nextPlan < plans.length) {
        const enough = nextPlan >= cfg.sessions && Date.now() - started >= cfg.durationMs;
        if (enough) return;
        const plan = plans[nextPlan++]!;
        try {
          await runSession(plan);
        } catch (err) {
          harness.push({ invariant: 'harness', message: `session ${plan.index}: ${(err as Error).stack}` });
        }
      }
    };
    await Promise.all(Array.from({ length: cfg.concurrency }, lane));
    monkeyOn = false;
    await monkeyDone;
    for (const p of pool.alive) pool.cont(p);
    frozen = undefined;
    while (pool.running.length < cfg.workers) pool.start();
    log(
      `chaos: driver done after ${Math.round((Date.now() - started) / 1000)} s, ${expectations.length} sessions; settling`,
    );

    // ---- settle: every session at rest and the queues drained, then stop the workers gently
    for (const e of expectations) poller.watch(e.sessionId);
    const settleDeadline = Date.now() + cfg.settleTimeoutMs;
    let settled = false;
    let last = { notAtRest: [] as string[], busy: 0, stale: 0 };
    while (Date.now() < settleDeadline) {
      const since = Date.now();
      await sleep(300); // the settle check's pace
      // A poll of many sessions can take longer than the pace: wait for one begun after `since`.
      await poller.refresh();
      const stale = expectations.filter((e) => (poller.get(e.sessionId)?.at ?? 0) <= since).length;
      const notAtRest = expectations
        .filter((e) => {
          const p = poller.get(e.sessionId);
          return !(p && ((p.status === 'idle' && p.lastAnswer > p.lastUser) || p.status === 'error'));
        })
        .map((e) => `${e.sessionId} (${poller.get(e.sessionId)?.status ?? '?'})`);
      const busy = await busyJobs(stack.deps.queues);
      last = { notAtRest, busy, stale };
      if (stale === 0 && notAtRest.length === 0 && busy === 0) {
        settled = true;
        break;
      }
    }
    if (!settled)
      harness.push({
        invariant: 'end-state',
        message:
          `not settled within ${cfg.settleTimeoutMs} ms: ${last.notAtRest.length} sessions not at rest ` +
          `[${last.notAtRest.slice(0, 5).join(', ')}], ${last.busy} jobs still to run, ${last.stale} stale snapshots`,
      });
    reconcilerOn = false;
    await reconcilerDone;
    clearInterval(housekeeping);
    tallyModelCalls();
    poller.stop();

    // Numbers from the queues before the workers go.
    const allJobs: Array<Job | undefined> = [];
    for (const q of stack.deps.queues.all())
      allJobs.push(...(await q.getJobs(['completed', 'failed', 'active', 'wait', 'delayed', 'prioritized'])));
    let stalledRestarts = 0;
    let failedForGood = 0;
    for (const j of allJobs) {
      if (!j) continue;
      stalledRestarts += Number((j as unknown as { stalledCounter?: number }).stalledCounter ?? 0);
      if (j.finishedOn && j.failedReason && !(await j.isCompleted())) {
        if (await j.isFailed()) {
          failedForGood++;
          harness.push({
            invariant: 'end-state',
            sessionId: j.data?.sessionId,
            message: `job ${j.id} failed for good after ${j.attemptsMade} attempts: ${j.failedReason}`,
          });
        }
      }
    }
    await pool.stopAll();
    // Workers are killed by the harness only; one that exits on its own is a bug (the old ones:
    // an unhandled pg client error, an exit at boot when PostgreSQL dropped the migration).
    for (const c of pool.crashes)
      harness.push({
        invariant: 'worker-crash',
        message: `worker ${c.worker} (pid ${c.pid}) exited on its own: ${c.reason}`,
      });

    // ---- invariants
    const report = await checkInvariants({
      db: admin,
      sessions: expectations,
      toolCalls: tools.calls,
      webhookTools: ['lookup', 'slow', 'big'],
      fenceAudit: true,
      allSessions: true,
      singleTextBlock: true,
      modelView: async (s) => {
        const res = await httpRetry(
          stats,
          base,
          key,
          'GET',
          `/v1/sessions/${s.sessionId}/messages?view=model`,
        );
        if (res.status !== 200) throw new Error(`view=model answered ${res.status}`);
        return res.body;
      },
    });
    const violations = [...harness, ...report.violations];
    const orphanNotes = orphans.map((o) => ({
      invariant: 'orphaned (seen by the harness)',
      sessionId: o.sessionId,
      message: `status ${o.status}, no pending job, no lock holder, at ${Math.round(o.at / 1000)} s`,
    }));
    await dumpSessions(admin, logDir, [...violations, ...orphanNotes], allJobs, pool);

    // ---- the summary table
    const superseded = pool.logged('superseded by a newer runner');
    const errText = (l: Record<string, unknown>) =>
      typeof l.err === 'string' ? l.err : String((l.err as { message?: string } | undefined)?.message ?? '');
    // StaleFenceError: a write was tried under a superseded fence and rejected by PostgreSQL. The
    // rest stopped before writing because the lease renewal saw the lock taken (abort).
    const rejections = superseded.filter((l) =>
      /newer runner owns this session|StaleFence/i.test(errText(l)),
    ).length;
    const jobFailures = pool.logged('job failed').length;
    const rows: Array<[string, string | number]> = [
      ['seed (FAULT_SEED)', cfg.seed],
      ['duration', `${Math.round((Date.now() - started) / 1000)} s`],
      ['sessions', expectations.length],
      ['user messages accepted', expectations.reduce((n, e) => n + e.accepted.length, 0)],
      ['messages in the log', report.stats.messages],
      ['model calls', modelCalls],
      ['tool executions (tool server)', [...tools.calls.values()].reduce((a, b) => a + b, 0)],
      ['worker processes started', pool.procs.length],
      ['worker crashes (restarted)', crashSummary(pool.crashes)],
    ];
    for (const kind of cfg.processFaults)
      rows.push([
        `fault: ${kind}`,
        `${faults.get(kind)}${misses.get(kind) ? ` (+${misses.get(kind)} no target)` : ''}`,
      ]);
    for (const [k, n] of [...modelFaultCounts.counts].sort()) rows.push([`fault: ${k}`, n]);
    for (const [k, n] of [...faults.counts].filter(([k]) => k.startsWith('gateway')).sort())
      rows.push([`fault: ${k}`, n]);
    rows.push(
      ['PostgreSQL backends terminated', stats.get('PostgreSQL backends terminated')],
      ['retries: BullMQ job failures (retried)', jobFailures],
      ['retries: stalled jobs restarted', stalledRestarts],
      ['retries: provider errors (retried steps)', report.stats.providerErrors],
      ['retries: gateway requests (5xx / network)', stats.get('gateway retries (5xx / network)')],
      ['jobs failed for good', failedForGood],
      ['orphaned sessions seen (no job, no lock)', orphans.length],
      [
        'sessions re-woken by the reconciler',
        cfg.reconcileMs > 0 ? pool.logged('reconciler re-woke a stalled session').length : 'off',
      ],
      ['fence acquisitions (runners)', report.stats.audit?.acquisitions ?? 0],
      ['fence rejections (StaleFenceError, write rolled back)', rejections],
      ['runners stopped by a lost lease (no write tried)', superseded.length - rejections],
      ['writes from stale fences', report.stats.audit?.staleWrites.length ?? 0],
      ['unfenced worker writes (title job, by design)', report.stats.audit?.titleWrites ?? 0],
      [
        'steps interrupted / tools interrupted',
        `${report.stats.stepsInterrupted} / ${report.stats.toolCallsInterrupted}`,
      ],
      [
        'compactions / summaries / failed runs',
        `${report.stats.compactions} / ${report.stats.summaries} / ${report.stats.compactionRunsSuperseded}`,
      ],
      ...Object.entries(report.stats.compactionFailures).map(([why, n]): [string, number] => [
        `  failed compaction run: ${why}`,
        n,
      ]),
      ['pruned tool outputs', report.stats.prunedOutputs],
      ['end statuses', JSON.stringify(report.stats.endStatuses)],
      ['invariant violations', violations.length],
    );
    const width = Math.max(...rows.map(([k]) => k.length));
    const table = [
      `┌${'─'.repeat(width + 2)}┬${'─'.repeat(24)}`,
      ...rows.map(([k, n]) => `│ ${k.padEnd(width)} │ ${n}`),
      `└${'─'.repeat(width + 2)}┴${'─'.repeat(24)}`,
    ].join('\n');
    return { config: cfg, violations, report, table, logDir };
  } finally {
    reconcilerOn = false;
    monkeyOn = false;
    poller.stop();
    await pool?.killAll();
    await proxy?.close();
    await tools?.close();
    await closeDb(admin);
    await stack.close();
  }
}
