// The Loopline API types, generated from the OpenAPI document by scripts/generate.ts
// (openapi-typescript). Do not edit: run `pnpm --filter @loopline/client generate`.

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Liveness
         * @description Always 200 while the process serves requests; checks no dependency (see /readyz).
         */
        get: operations["getHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Readiness: 200 when Redis PING and PostgreSQL `select 1` succeed, else 503
         * @description Each check has a 2 s timeout. A load balancer should route only to ready gateways; the body says which dependency failed.
         */
        get: operations["getReadiness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Prometheus metrics of this gateway and the job counts of every queue
         * @description The gateway registry (HTTP requests and latency by route, sessions created and messages accepted by tenant, process metrics) followed by BullMQ `exportPrometheusMetrics()` of every queue in the job catalog (`bullmq_job_count{queue,state}`, `bullmq_job_completed_total`, `bullmq_job_failed_total`). Requires the operator token as a bearer token. The loop metrics (step and model latency, tokens, compactions, lock waits, fence rejections) are on each worker (WORKER_METRICS_PORT).
         */
        get: operations["getMetrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/tenants": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create a tenant and its first API key
         * @description Operator token required. The API key is returned once, here; only its SHA-256 hash is stored. The tenant uses it as `Authorization: Bearer <api key>` on /v1/*.
         */
        post: operations["createTenant"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/tenants/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A tenant: its limits and API keys
         * @description Operator token required. The limits set for the tenant (an absent one is the deployment default) and every API key it has, revoked ones included; keys are shown by id and prefix only.
         */
        get: operations["getTenant"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Change a tenant's limits
         * @description Numbers set limits, null removes one (the deployment default applies), absent keys stay. Applies at once: the gateway reads the limits with every request's key, workers before every model call.
         */
        patch: operations["updateTenant"];
        trace?: never;
    };
    "/v1/admin/tenants/{id}/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create another API key for a tenant
         * @description Operator token required. Keys are independent: create a new one, roll it out, then revoke the old one. 404 for an unknown tenant.
         */
        post: operations["createApiKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/tenants/{id}/keys/{keyId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke an API key (requests with it get 401 from now on)
         * @description Operator token required. 204 with no body; 404 when the key is unknown or not the tenant’s.
         */
        delete: operations["revokeApiKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get an agent
         * @description The stored configuration with every default filled in. 404 for an unknown name.
         */
        get: operations["getAgent"];
        /**
         * Create (201) or update (200) an agent
         * @description The body is the whole agent configuration (unknown fields are refused; omitted ones take their defaults). Every tool it names must be defined for the tenant or built in. Existing sessions keep the configuration they were created with; the version is bumped by every update. `model` names an operator-configured provider (`<provider>/<id>`), or the agent brings its own `baseURL` and `apiKey` (write-only: stored encrypted, never returned).
         */
        put: operations["putAgent"];
        post?: never;
        /**
         * Delete an agent
         * @description Removes the definition: new sessions and batches can no longer name it. Existing sessions, running ones included, keep the configuration they were created with and go on unchanged. The task tool of other agents lists subagents at each step, so a deleted agent stops being offered as a subagent. 404 for an unknown name.
         */
        delete: operations["deleteAgent"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List agents
         * @description The agents of the authenticated tenant by name, with their stored configurations: all of them (at most 500), or with ?limit= pages of that many; pass nextCursor as ?cursor= for the next. An answer holds at most about 16 MiB of configurations: past that it ends early, with nextCursor.
         */
        get: operations["listAgents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tools/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a tool
         * @description The stored configuration with every default filled in. 404 for an unknown name.
         */
        get: operations["getTool"];
        /**
         * Create (201) or update (200) a tool
         * @description A webhook tool: the worker POSTs `{callId, sessionId, tool, input}` to its http(s) URL (private addresses refused unless the operator allows them; no CR/LF, hop-by-hop or `host` headers) and records the answer. Every call is signed (Standard Webhooks `webhook-id`, `webhook-timestamp`, `webhook-signature`); the secret is returned once, as `signingSecret`, when the tool gets it. The input schema is a JSON Schema object.
         */
        put: operations["putTool"];
        post?: never;
        /**
         * Delete a tool
         * @description 409 tool_in_use (details.agents) while an agent names the tool: change those agents first. Sessions read their tool definitions at every step, so a session created with the tool stops offering it to the model from its next step on (a call to it already made is answered as an unknown tool). 404 for an unknown name.
         */
        delete: operations["deleteTool"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tools": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List tools
         * @description The tools of the authenticated tenant by name (built-in tools such as read_output are not listed): all of them (at most 1,000), or with ?limit= pages of that many; pass nextCursor as ?cursor= for the next. An answer holds at most about 16 MiB of configurations: past that it ends early, with nextCursor.
         */
        get: operations["listTools"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List sessions (newest first, filtered, paginated)
         * @description Sessions of the tenant, newest first. Filters combine (AND): status (comma-separated), agent, metadata (a JSON object the session metadata must contain, e.g. {"userId":"u-42"}), parent (child sessions of a session), createdAfter/createdBefore. Pages hold `limit` sessions; pass nextCursor as ?cursor= with the same filters for the next page (null on the last one). With a status, agent or metadata filter a page reads at most 5,000 sessions, so it may hold fewer than `limit` (even none) and still have a nextCursor: follow it until it is null.
         */
        get: operations["listSessions"];
        put?: never;
        /**
         * Create a session for an agent
         * @description The agent's configuration, with the optional overrides merged over it, is frozen on the session: editing the agent later never changes it. The session starts idle with no title; send a message to start the loop.
         */
        post: operations["createSession"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Session status, token gauge and compaction count
         * @description status is idle, queued, running, compacting, waiting or error (with its typed error). title is written in the background after the first turn (null until then, and if the title model failed). tokens is the context gauge of the next prompt; compaction counts completed compactions.
         */
        get: operations["getSession"];
        put?: never;
        post?: never;
        /**
         * Delete a session and all its data
         * @description For data-deletion requests: removes the session, its messages and parts, stored tool outputs, steps, compaction records, idempotency records, its event stream and its queued jobs, and the same for every child session (subagent) below it. 409 session_busy while it (or a child) is working, unless ?force=true, which aborts the turn first and waits for it to stop; 409 batch_running for a conversation of a batch that is still running (cancel the batch first). Nothing is deleted on an error. The deletion cannot be undone.
         */
        delete: operations["deleteSession"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/children": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Child sessions (subagents) of a session
         * @description Sessions started by this session's task tool, newest first, paginated like GET /v1/sessions. Each shows its parentSessionId.
         */
        get: operations["listChildSessions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The session history: the log (in pages), or the model view
         * @description view=log (default): every message and part ever written, including reverted ones and replaced history before compactions. view=model: from the newest compaction boundary, filtered and converted exactly as the next model call will send it, with the system blocks. view=log pages with after / before (message seq, exclusive) and limit: the next page of a long history is ?after=<last seq>, older messages are ?before=<first seq>; hasMore says whether more messages lie beyond the page. A page holds at most 1000 messages and about 16 MiB of JSON (a single larger message alone), and without limit it is the first (or, with before, the last) 1000 that fit.
         */
        get: operations["listMessages"];
        put?: never;
        /**
         * Append a user message and wake the session
         * @description Returns 202 once the message is stored and the session woken. With an Idempotency-Key, a retry with the same body returns the first response and writes nothing; the same key with another body is 409. A message that arrives while the session runs is marked midRun (steered into the current turn, or queued, per the agent). A message too large for the agent's window to ever hold (beside its system prompt) is refused with 413 input_too_large and not stored. With `Prefer: wait=N` (seconds, at most 120) the answer waits for the turn: 200 with the finished turn (the assistant messages and their text) when it ends within N seconds, else the usual 202 (follow the events or poll the session).
         */
        post: operations["sendMessage"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Server-Sent Events of the session (resumable with Last-Event-ID)
         * @description Without Last-Event-ID or ?after= the stream starts at the oldest retained event; ?after=$ starts after the newest. A `: heartbeat` comment is sent after 15 s without events. Open streams are capped per API key and per tenant: 429 `rate_limited` past the cap.
         */
        get: operations["streamEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/compact": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Compact the session now (optional extra instructions for the summary)
         * @description Returns 202 with the compaction message; 409 while the session is compacting. It runs at the next step boundary: on an idle session it leaves the session idle; during a turn (running, or waiting on a client tool) the turn continues afterwards (continue message), and tool results sent meanwhile are read by the model. With nothing new to summarise, or a result that would not shrink the context, it is a no-op: recorded (status noop, CompactionNoopError), nothing changed.
         */
        post: operations["compactSession"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/context": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Context gauge, compaction suggestion, boundary and compaction records
         * @description used is the estimate of the next prompt (provider tokens, anchored on the last provider report); trigger is where the loop compacts before calling the model, background where an idle session is compacted in the background. pruneWouldFree is what the prune job would clear now; suggestion.estimatedSavings adds what a summary compaction would remove (the summarised head minus an expected summary of min(2,000, head / 10) tokens). compactions lists the runs (the newest 1,000), oldest first; those whose compaction message a revert hid are marked reverted. estimates: the newest 1,000 model steps' estimates beside what the provider reported.
         */
        get: operations["getContext"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/revert": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Revert to a message: hide it and everything after it from the model
         * @description The rows stay in the log (view=log shows them with reverted: true); the model view no longer has them, across any number of compaction points: compactions after the revert point stop being boundaries. Reverting to a summary, or to input that arrived while a compaction ran, takes that whole compaction point with it (fromSeq is then its compaction message). Refused with 409 session_busy unless the session is idle or error (an error status becomes idle), and with 409 conflict for a message that is already reverted (it would hide the live history written since). New input is appended after the revert.
         */
        post: operations["revertSession"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/abort": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Abort the running turn (model stream, tools, subagents)
         * @description Stops the turn wherever it is: a streaming model call and running webhook tools are cancelled within a second (text streamed so far is kept, the reply gets AbortedError, unfinished tools become interrupted), a queued or waiting session stops before its next model call, and running child sessions (subagents) are aborted too. The session then goes idle; a new message starts a new turn. 202 {aborted: true} when a turn was stopped (watch the events for session.idle); 200 {aborted: false} when the session was already idle or error (nothing is written).
         */
        post: operations["abortSession"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/tool-results": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Submit results of client tool calls
         * @description A session whose model called a client tool (kind "client") waits (status waiting) with the calls in pendingToolCalls of GET /v1/sessions/:id. Each result is an output or an error; any subset of the pending calls may be answered at once. 409 session_not_waiting unless the session is waiting, 404 for an unknown call id, 409 tool_call_answered for a call that already has a result (answered, timed out or aborted); nothing is written on any error. On success the session is queued again and the loop goes on (with calls still pending, it waits again).
         */
        post: operations["submitToolResults"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/batches": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Submit a batch of conversations
         * @description Creates one session per conversation and runs them through the queue at the tenant limits (concurrent sessions, token budget) and below interactive sessions in priority. Each conversation posts its messages one at a time: the next after the session answered the previous one. Body: JSON, or JSONL (content-type application/x-ndjson, one conversation per line, agent in ?agent=). At most 10,000 conversations and 32 MiB. Everything is validated before anything is written; a bad JSONL line is a 400 naming it (details.line).
         */
        post: operations["createBatch"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/batches/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Batch progress
         * @description The batch status (running, completed, cancelled) and its conversations counted by state: queued (not started, or waiting for a worker, a tenant slot or token budget), running, completed, failed, cancelled.
         */
        get: operations["getBatch"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/batches/{id}/results": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Batch results as JSONL
         * @description Streams one JSON line per conversation, in input order: its session, state, final answer text, usage totals over every model call, compactions and error. Available at any time; unfinished conversations show their state and no output.
         */
        get: operations["getBatchResults"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/batches/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a batch
         * @description Marks the batch and its unfinished conversations cancelled: no further messages are posted, queued sessions stop (idle, "cancelled with its batch"), running ones are aborted. Finished conversations keep their results. Cancelling a finished or cancelled batch changes nothing.
         */
        post: operations["cancelBatch"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a webhook subscription
         * @description The subscription without its secret. 404 for an unknown name.
         */
        get: operations["getV1WebhooksName"];
        /**
         * Create (201) or update (200) a webhook subscription
         * @description Loopline POSTs each subscribed event as JSON `{id, type, timestamp, data}` to the URL, signed with the Standard Webhooks scheme (`webhook-id` = the event id, stable across retries; `webhook-timestamp`; `webhook-signature: v1,<base64 HMAC-SHA256>`). The secret is returned once, when the subscription is created or `rotateSecret` is set. Events: session.idle, session.error, session.waiting (client tools or subagents), compaction.completed, batch.completed. Failed deliveries are retried with backoff, then marked failed; the URL obeys the egress rules of webhook tools (private addresses refused unless the operator allows them).
         */
        put: operations["putV1WebhooksName"];
        post?: never;
        /**
         * Delete a webhook subscription
         * @description No more deliveries; pending ones end as failed. Its delivery history stays listed.
         */
        delete: operations["deleteV1WebhooksName"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List webhook subscriptions
         * @description Every subscription of the authenticated tenant, without secrets.
         */
        get: operations["getV1Webhooks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{name}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the deliveries of a subscription
         * @description Newest first: each event sent (or being sent), its status (pending, delivered, failed), attempts, the last HTTP status and error, and the body.
         */
        get: operations["getV1WebhooksNameDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{name}/deliveries/{id}/redeliver": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Deliver an event again
         * @description Sends the delivery again (same event id and body, a fresh signature), with the usual retries. 202; 404 for an unknown subscription or delivery; 409 while the delivery is still pending (being delivered or retried): one delivery of an event at a time.
         */
        post: operations["postV1WebhooksNameDeliveriesIdRedeliver"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/chat": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * AI SDK UI chat: send the new message, stream the turn
         * @description The endpoint of `DefaultChatTransport` (`useChat`): the body id is the session id. A last message with role user is appended to the session, idempotently by its UI message id (a retry appends nothing; the same id with other content is 409), and the turn streams as an AI SDK UI message stream. A last message with role assistant carries client tool results (addToolResult): they are submitted and the continuation streams. The stream ends when the session is idle, failed, or waits for client tool results (useChat runs onToolCall); disconnecting never stops the turn.
         */
        post: operations["chat"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/chat/{id}/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * AI SDK UI chat: reattach to the running turn
         * @description useChat's resume (`useChat({ resume: true })`, `resumeStream()`): replays the running turn's UI message stream from its start and follows it live. 204 when no turn is running (the session is idle or failed).
         */
        get: operations["resumeChatStream"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/sessions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Sessions of every tenant (operator)
         * @description The session inspector's list: sessions of all tenants, newest first, optionally of one tenant or status. Operator token.
         */
        get: operations["listAllSessions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/sessions/{id}/inspect": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Inspect a session of any tenant (operator)
         * @description Everything the session inspector page shows: history, steps with their attempts and fences, compaction runs and the token gauge over time. Operator token.
         */
        get: operations["inspectSession"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/inspector": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The session inspector page (operator)
         * @description Sign in at /admin/login (or open /admin/inspector?token=<operator token> once) for a signed, expiring HttpOnly cookie; also accepts the operator token as a bearer token.
         */
        get: operations["getInspectorPage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * @description Every error response
         * @example {
         *       "error": {
         *         "code": "not_found",
         *         "message": "session \"ses_x\" not found"
         *       }
         *     }
         */
        Problem: {
            error: {
                /** @description Stable machine-readable code, e.g. validation_error, not_found */
                code: string;
                /** @description Human-readable explanation */
                message: string;
                /** @description Structured details, e.g. the failed validation issues */
                details?: unknown;
            };
        };
        ErrorData: {
            name: string;
            message: string;
            data?: {
                [key: string]: unknown;
            };
        };
        Usage: {
            input: number;
            output: number;
            reasoning: number;
            cache: {
                read: number;
                write: number;
            };
            total: number;
        };
        AgentConfig: {
            model: string;
            /** Format: uri */
            baseURL?: string;
            system?: string;
            /** @default [] */
            tools: string[];
            limits?: {
                context: number;
                input?: number;
                output: number;
            };
            /** @default 50 */
            maxSteps: number;
            temperature?: number;
            /**
             * @default primary
             * @enum {string}
             */
            mode: "primary" | "subagent" | "all";
            /**
             * @default steer
             * @enum {string}
             */
            midRunMessages: "steer" | "queue";
            /**
             * @default {
             *       "auto": true,
             *       "prune": true,
             *       "backgroundRatio": 0.8,
             *       "backgroundDelayMs": 30000,
             *       "tailTurns": 2,
             *       "extraContext": [],
             *       "maxIterations": 3,
             *       "maxCompactionsPerTurn": 0,
             *       "growthMargin": 0.1,
             *       "protectedTools": [
             *         "skill"
             *       ],
             *       "pruneProtectSteps": 3
             *     }
             */
            compaction: {
                /** @default true */
                auto: boolean;
                /** @default true */
                prune: boolean;
                reserved?: number;
                triggerRatio?: number;
                /** @default 0.8 */
                backgroundRatio: number;
                /** @default 30000 */
                backgroundDelayMs: number;
                /** @default 2 */
                tailTurns: number;
                preserveRecentTokens?: number;
                prompt?: string;
                /** @default [] */
                extraContext: string[];
                model?: string;
                /** @default 3 */
                maxIterations: number;
                /** @default 0 */
                maxCompactionsPerTurn: number;
                /** @default 0.1 */
                growthMargin: number;
                /**
                 * @default [
                 *       "skill"
                 *     ]
                 */
                protectedTools: string[];
                /** @default 3 */
                pruneProtectSteps: number;
                pruneProtect?: number;
                pruneMinimum?: number;
            };
            /**
             * @default {
             *       "maxLines": 2000,
             *       "maxBytes": 51200,
             *       "direction": "head",
             *       "windowShare": 0.25,
             *       "retentionDays": 30
             *     }
             */
            toolOutput: {
                /** @default 2000 */
                maxLines: number;
                /** @default 51200 */
                maxBytes: number;
                /**
                 * @default head
                 * @enum {string}
                 */
                direction: "head" | "tail";
                /** @default 0.25 */
                windowShare: number;
                /** @default 30 */
                retentionDays: number;
            };
            /** @default false */
            resendsReasoning: boolean;
            /** @enum {string} */
            server?: "openai" | "vllm" | "llamacpp" | "ollama" | "lmstudio" | "tgi" | "generic";
            capabilities?: {
                /** @enum {string} */
                tools?: "auto" | "none";
                usageInStream?: boolean;
                strictAlternation?: boolean;
                systemRole?: boolean;
                maxOutput?: number;
            };
            /** @enum {string} */
            tokenizer?: "openai" | "claude" | "gemini" | "llama" | "deepseek" | "qwen" | "mistral";
            titleModel?: string;
        };
        /**
         * @description An agent: its name and stored configuration (defaults filled in)
         * @example {
         *       "name": "researcher",
         *       "config": {
         *         "model": "openai/gpt-4.1-mini",
         *         "system": "You are a careful research assistant.",
         *         "tools": [
         *           "search"
         *         ],
         *         "limits": {
         *           "context": 128000,
         *           "output": 16384
         *         },
         *         "maxSteps": 30,
         *         "mode": "primary",
         *         "midRunMessages": "steer",
         *         "compaction": {
         *           "auto": true,
         *           "prune": true,
         *           "triggerRatio": 0.8,
         *           "backgroundRatio": 0.8,
         *           "backgroundDelayMs": 30000,
         *           "tailTurns": 2,
         *           "extraContext": [],
         *           "maxIterations": 3,
         *           "maxCompactionsPerTurn": 0,
         *           "growthMargin": 0.1,
         *           "protectedTools": [
         *             "skill"
         *           ],
         *           "pruneProtectSteps": 3
         *         },
         *         "toolOutput": {
         *           "maxLines": 2000,
         *           "maxBytes": 51200,
         *           "direction": "head",
         *           "windowShare": 0.25,
         *           "retentionDays": 30
         *         },
         *         "resendsReasoning": false
         *       },
         *       "version": 2,
         *       "createdAt": "2026-05-01T09:00:00.000Z",
         *       "updatedAt": "2026-05-01T09:30:00.000Z"
         *     }
         */
        Agent: {
            name: string;
            config: components["schemas"]["AgentConfig"];
            /** @description Bumped by every update */
            version: number;
            /** @description ISO 8601 timestamp */
            createdAt: string;
            /** @description ISO 8601 timestamp */
            updatedAt: string;
        };
        /**
         * @description The tenant's agents by name: all of them, or a page of `limit`
         * @example {
         *       "agents": [
         *         {
         *           "name": "researcher",
         *           "config": {
         *             "model": "openai/gpt-4.1-mini",
         *             "system": "You are a careful research assistant.",
         *             "tools": [
         *               "search"
         *             ],
         *             "limits": {
         *               "context": 128000,
         *               "output": 16384
         *             },
         *             "maxSteps": 30,
         *             "mode": "primary",
         *             "midRunMessages": "steer",
         *             "compaction": {
         *               "auto": true,
         *               "prune": true,
         *               "triggerRatio": 0.8,
         *               "backgroundRatio": 0.8,
         *               "backgroundDelayMs": 30000,
         *               "tailTurns": 2,
         *               "extraContext": [],
         *               "maxIterations": 3,
         *               "maxCompactionsPerTurn": 0,
         *               "growthMargin": 0.1,
         *               "protectedTools": [
         *                 "skill"
         *               ],
         *               "pruneProtectSteps": 3
         *             },
         *             "toolOutput": {
         *               "maxLines": 2000,
         *               "maxBytes": 51200,
         *               "direction": "head",
         *               "windowShare": 0.25,
         *               "retentionDays": 30
         *             },
         *             "resendsReasoning": false
         *           },
         *           "version": 2,
         *           "createdAt": "2026-05-01T09:00:00.000Z",
         *           "updatedAt": "2026-05-01T09:30:00.000Z"
         *         }
         *       ],
         *       "nextCursor": null
         *     }
         */
        AgentList: {
            agents: components["schemas"]["Agent"][];
            /** @description With limit: pass as ?cursor= for the next page; null on the last page (always null without limit) */
            nextCursor: string | null;
        };
        /**
         * @description A tool: its name and stored configuration (defaults filled in)
         * @example {
         *       "name": "search",
         *       "config": {
         *         "kind": "webhook",
         *         "description": "Search the web",
         *         "inputSchema": {
         *           "type": "object",
         *           "properties": {
         *             "q": {
         *               "type": "string"
         *             }
         *           },
         *           "required": [
         *             "q"
         *           ]
         *         },
         *         "url": "https://tools.example.com/search",
         *         "timeoutMs": 30000,
         *         "headers": {}
         *       },
         *       "version": 1,
         *       "createdAt": "2026-05-01T09:00:00.000Z",
         *       "updatedAt": "2026-05-01T09:00:00.000Z"
         *     }
         */
        Tool: {
            name: string;
            config: {
                /** @constant */
                kind: "webhook";
                /** @default  */
                description: string;
                /** @description JSON Schema of the tool input; must be an object schema */
                inputSchema: {
                    /** @constant */
                    type: "object";
                } & {
                    [key: string]: unknown;
                };
                /** Format: uri */
                url: string;
                /** @default 30000 */
                timeoutMs: number;
                /** @default {} */
                headers: {
                    [key: string]: string;
                };
                maxResponseBytes?: number;
            } | {
                /** @constant */
                kind: "client";
                /** @default  */
                description: string;
                /** @description JSON Schema of the tool input; must be an object schema */
                inputSchema: {
                    /** @constant */
                    type: "object";
                } & {
                    [key: string]: unknown;
                };
                timeoutMs?: number;
            };
            /** @description Bumped by every update */
            version: number;
            /** @description ISO 8601 timestamp */
            createdAt: string;
            /** @description ISO 8601 timestamp */
            updatedAt: string;
        };
        /**
         * @description The tenant's tools by name: all of them, or a page of `limit`
         * @example {
         *       "tools": [
         *         {
         *           "name": "search",
         *           "config": {
         *             "kind": "webhook",
         *             "description": "Search the web",
         *             "inputSchema": {
         *               "type": "object",
         *               "properties": {
         *                 "q": {
         *                   "type": "string"
         *                 }
         *               },
         *               "required": [
         *                 "q"
         *               ]
         *             },
         *             "url": "https://tools.example.com/search",
         *             "timeoutMs": 30000,
         *             "headers": {}
         *           },
         *           "version": 1,
         *           "createdAt": "2026-05-01T09:00:00.000Z",
         *           "updatedAt": "2026-05-01T09:00:00.000Z"
         *         }
         *       ],
         *       "nextCursor": null
         *     }
         */
        ToolList: {
            tools: components["schemas"]["Tool"][];
            /** @description With limit: pass as ?cursor= for the next page; null on the last page (always null without limit) */
            nextCursor: string | null;
        };
        UserMessage: {
            id: string;
            sessionId: string;
            seq: number;
            time: {
                created: number;
                completed?: number;
            };
            reverted?: boolean;
            /** @constant */
            role: "user";
            agent: string;
            system?: string;
            synthetic?: boolean;
            midRun?: boolean;
        };
        AssistantMessage: {
            id: string;
            sessionId: string;
            seq: number;
            time: {
                created: number;
                completed?: number;
            };
            reverted?: boolean;
            /** @constant */
            role: "assistant";
            parentId: string;
            summary?: boolean;
            /** @enum {string} */
            finish?: "stop" | "length" | "content-filter" | "tool-calls" | "error" | "interrupted" | "other";
            error?: components["schemas"]["ErrorData"];
            usage?: components["schemas"]["Usage"];
            cost?: number;
            model: string;
            agent: string;
            step?: number;
        };
        Message: components["schemas"]["UserMessage"] | components["schemas"]["AssistantMessage"];
        TextPart: {
            id: string;
            sessionId: string;
            messageId: string;
            /** @default 0 */
            tokens: number;
            /** @constant */
            type: "text";
            text: string;
            synthetic?: boolean;
            ignored?: boolean;
        };
        ToolState: {
            /** @constant */
            status: "pending";
            input: {
                [key: string]: unknown;
            };
            raw?: string;
        } | {
            /** @constant */
            status: "running";
            input: {
                [key: string]: unknown;
            };
            title?: string;
            metadata?: {
                [key: string]: unknown;
            };
            time: {
                start: number;
            };
        } | {
            /** @constant */
            status: "completed";
            input: {
                [key: string]: unknown;
            };
            output: string;
            /** @default  */
            title: string;
            /** @default {} */
            metadata: {
                [key: string]: unknown;
            };
            truncated?: {
                outputId: string;
                totalLines: number;
                totalBytes: number;
                /** @enum {string} */
                direction: "head" | "tail";
            };
            time: {
                start: number;
                end: number;
                compacted?: number;
            };
        } | {
            /** @constant */
            status: "error";
            input: {
                [key: string]: unknown;
            };
            error: string;
            output?: string;
            interrupted?: boolean;
            time: {
                start: number;
                end: number;
            };
        };
        ToolPart: {
            id: string;
            sessionId: string;
            messageId: string;
            /** @default 0 */
            tokens: number;
            /** @constant */
            type: "tool";
            callId: string;
            tool: string;
            state: components["schemas"]["ToolState"];
            outputTokens?: number;
        };
        Part: components["schemas"]["TextPart"] | {
            id: string;
            sessionId: string;
            messageId: string;
            /** @default 0 */
            tokens: number;
            /** @constant */
            type: "reasoning";
            text: string;
        } | {
            id: string;
            sessionId: string;
            messageId: string;
            /** @default 0 */
            tokens: number;
            /** @constant */
            type: "file";
            mime: string;
            filename?: string;
            url: string;
        } | components["schemas"]["ToolPart"] | {
            id: string;
            sessionId: string;
            messageId: string;
            /** @default 0 */
            tokens: number;
            /** @constant */
            type: "step-start";
        } | {
            id: string;
            sessionId: string;
            messageId: string;
            /** @default 0 */
            tokens: number;
            /** @constant */
            type: "step-finish";
            reason: string;
            usage: components["schemas"]["Usage"];
        } | {
            id: string;
            sessionId: string;
            messageId: string;
            /** @default 0 */
            tokens: number;
            /** @constant */
            type: "compaction";
            auto: boolean;
            /** @default false */
            overflow: boolean;
            tailStartId?: string;
            instructions?: string;
            iteration?: number;
            streak?: number;
            background?: boolean;
            noop?: boolean;
        } | {
            id: string;
            sessionId: string;
            messageId: string;
            /** @default 0 */
            tokens: number;
            /** @constant */
            type: "subtask";
            agent: string;
            prompt: string;
            description: string;
        } | {
            id: string;
            sessionId: string;
            messageId: string;
            /** @default 0 */
            tokens: number;
            /** @constant */
            type: "retry";
            attempt: number;
            error: components["schemas"]["ErrorData"];
        };
        MessageWithParts: {
            info: components["schemas"]["Message"];
            parts: components["schemas"]["Part"][];
        };
        /** @description Context gauge of the session */
        TokenGauge: {
            /** @description Estimated provider tokens of the next prompt, anchored on the last provider report */
            used: number;
            /** @description Window available for input after the output reserve */
            usable: number;
            /** @description Compaction starts at this many tokens */
            trigger: number;
            /** @description An idle session above this is compacted in the background */
            background: number;
        };
        /** @description One compaction run (docs/context.md §5.7) */
        CompactionRecord: {
            id: string;
            /** @description The compaction message (a synthetic user message holding the compaction part) */
            messageId: string;
            /** @description The summary it produced (null until it completed) */
            summaryMessageId: string | null;
            /**
             * @description Why it ran: auto (the loop's overflow check), manual (POST …/compact), overflow (a request too large), background (an idle session above the background threshold)
             * @enum {string}
             */
            reason: "auto" | "manual" | "overflow" | "background";
            /** @description The ladder rung that produced the summary: summary, summary-no-tail, chunked (map then merge) or structural (no LLM) */
            rung: string | null;
            /**
             * @description noop: nothing new to summarise, or the result would not have shrunk the context; nothing was changed
             * @enum {string}
             */
            status: "running" | "completed" | "failed" | "noop";
            tokensBefore: number | null;
            tokensAfter: number | null;
            /** @description Messages the summary replaced */
            headMessages: number | null;
            /** @description First message kept verbatim after the summary */
            tailStartId: string | null;
            /** @description Model that wrote the summary */
            model: string | null;
            /** @description ISO 8601 timestamp */
            startedAt: string;
            finishedAt: string | null;
            /** @description Wall time of the run, from start to commit */
            durationMs: number | null;
            /** @description Model requests the compaction made: retries, every chunk and the merge of a chunked one */
            requests: number | null;
            /** @description Why a failed run failed, or why a noop changed nothing */
            error: components["schemas"]["ErrorData"] | null;
            /** @description Its compaction message was hidden by a revert: it is no longer a boundary */
            reverted: boolean;
        };
        /** @description Compactions of the session */
        CompactionSummary: {
            /** @description Completed compactions still in the history (reverted ones excluded) */
            count: number;
            /** @description When the newest of them finished */
            lastAt: string | null;
            /** @description The newest run still in the history, of any status */
            last: components["schemas"]["CompactionRecord"] | null;
        };
        /** @description A client tool call the session waits on */
        PendingToolCall: {
            /** @description Id of the call: answer it with POST /v1/sessions/:id/tool-results */
            callId: string;
            /** @description Name of the client tool */
            tool: string;
            /** @description Arguments the model passed */
            input: {
                [key: string]: unknown;
            };
            /** @description When the model made the call */
            createdAt: string;
            /** @description When the call becomes an error 'timed out' (tool timeoutMs) */
            expiresAt?: string;
        };
        /**
         * @description A session: status, title, token gauge and compactions
         * @example {
         *       "id": "ses_01JQ8Z9",
         *       "agent": "researcher",
         *       "status": "idle",
         *       "statusDetail": null,
         *       "error": null,
         *       "title": "Weather in Paris this weekend",
         *       "stepCount": 2,
         *       "parentSessionId": null,
         *       "compaction": {
         *         "count": 0,
         *         "lastAt": null,
         *         "last": null
         *       },
         *       "tokens": {
         *         "used": 1840,
         *         "usable": 111616,
         *         "trigger": 89292,
         *         "background": 71433
         *       },
         *       "metadata": {
         *         "ticket": "T-1"
         *       },
         *       "pendingToolCalls": [],
         *       "createdAt": "2026-05-01T10:00:00.000Z",
         *       "updatedAt": "2026-05-01T10:00:04.200Z"
         *     }
         */
        Session: {
            id: string;
            /** @description Agent name */
            agent: string;
            /** @enum {string} */
            status: "idle" | "queued" | "running" | "compacting" | "waiting" | "error";
            statusDetail: string | null;
            error: components["schemas"]["ErrorData"] | null;
            /** @description Short title written in the background after the first turn (null until then, or if it failed) */
            title: string | null;
            stepCount: number;
            /** @description The session whose task tool started this one (a subagent); its children: GET …/children */
            parentSessionId: string | null;
            compaction: components["schemas"]["CompactionSummary"];
            tokens: components["schemas"]["TokenGauge"];
            /** @description Free-form JSON kept with the session, returned as is */
            metadata: {
                [key: string]: unknown;
            };
            /** @description Client tool calls the session waits on (status waiting); answer with POST …/tool-results */
            pendingToolCalls?: components["schemas"]["PendingToolCall"][];
            /** @description ISO 8601 timestamp */
            createdAt: string;
            /** @description ISO 8601 timestamp */
            updatedAt: string;
        };
        /** @description A session as listed (GET /v1/sessions/:id adds the token gauge and compactions) */
        SessionSummary: {
            id: string;
            /** @description Agent name */
            agent: string;
            /** @enum {string} */
            kind: "interactive" | "batch";
            /** @enum {string} */
            status: "idle" | "queued" | "running" | "compacting" | "waiting" | "error";
            statusDetail: string | null;
            error: components["schemas"]["ErrorData"] | null;
            title: string | null;
            stepCount: number;
            /** @description The session whose task tool started this one */
            parentSessionId: string | null;
            metadata: {
                [key: string]: unknown;
            };
            /** @description ISO 8601 timestamp */
            createdAt: string;
            /** @description ISO 8601 timestamp */
            updatedAt: string;
        };
        /**
         * @description One page of sessions, newest first
         * @example {
         *       "sessions": [
         *         {
         *           "id": "ses_01JQ8Z9",
         *           "agent": "researcher",
         *           "kind": "interactive",
         *           "status": "idle",
         *           "statusDetail": null,
         *           "error": null,
         *           "title": "Weather in Paris this weekend",
         *           "stepCount": 2,
         *           "parentSessionId": null,
         *           "metadata": {
         *             "userId": "u-42"
         *           },
         *           "createdAt": "2026-05-01T10:00:00.000Z",
         *           "updatedAt": "2026-05-01T10:00:04.200Z"
         *         }
         *       ],
         *       "nextCursor": null
         *     }
         */
        SessionList: {
            /** @description Newest first */
            sessions: components["schemas"]["SessionSummary"][];
            /** @description Pass as ?cursor= for the next page; null on the last page */
            nextCursor: string | null;
        };
        /**
         * @description The message was stored and the session woken
         * @example {
         *       "message": {
         *         "info": {
         *           "id": "msg_01JQ8ZA1",
         *           "sessionId": "ses_01JQ8Z9",
         *           "seq": 1,
         *           "time": {
         *             "created": 1777629600000
         *           },
         *           "role": "user",
         *           "agent": "researcher"
         *         },
         *         "parts": [
         *           {
         *             "id": "prt_01JQ8ZA2",
         *             "sessionId": "ses_01JQ8Z9",
         *             "messageId": "msg_01JQ8ZA1",
         *             "tokens": 9,
         *             "type": "text",
         *             "text": "What is the weather in Paris this weekend?"
         *           }
         *         ]
         *       },
         *       "session": {
         *         "id": "ses_01JQ8Z9",
         *         "status": "queued"
         *       }
         *     }
         */
        AcceptedMessage: {
            /** @description The stored user message with its parts */
            message: components["schemas"]["MessageWithParts"];
            /** @description The session after the append (queued unless it was already working) */
            session: {
                id: string;
                /** @enum {string} */
                status: "idle" | "queued" | "running" | "compacting" | "waiting" | "error";
            };
        };
        /**
         * @description The message was stored and its turn finished within the Prefer: wait time
         * @example {
         *       "message": {
         *         "info": {
         *           "id": "msg_01",
         *           "sessionId": "ses_01",
         *           "seq": 1,
         *           "time": {
         *             "created": 1777629600000
         *           },
         *           "role": "user",
         *           "agent": "researcher"
         *         },
         *         "parts": [
         *           {
         *             "id": "prt_01",
         *             "sessionId": "ses_01",
         *             "messageId": "msg_01",
         *             "tokens": 2,
         *             "type": "text",
         *             "text": "Hi"
         *           }
         *         ]
         *       },
         *       "session": {
         *         "id": "ses_01",
         *         "status": "idle"
         *       },
         *       "reply": {
         *         "messages": [
         *           {
         *             "info": {
         *               "id": "msg_02",
         *               "sessionId": "ses_01",
         *               "seq": 2,
         *               "time": {
         *                 "created": 1777629600400,
         *                 "completed": 1777629601100
         *               },
         *               "role": "assistant",
         *               "parentId": "msg_01",
         *               "finish": "stop",
         *               "model": "openai/gpt-4.1-mini",
         *               "agent": "researcher"
         *             },
         *             "parts": [
         *               {
         *                 "id": "prt_02",
         *                 "sessionId": "ses_01",
         *                 "messageId": "msg_02",
         *                 "tokens": 3,
         *                 "type": "text",
         *                 "text": "Hello!"
         *               }
         *             ]
         *           }
         *         ],
         *         "text": "Hello!"
         *       }
         *     }
         */
        FinishedTurn: {
            /** @description The stored user message with its parts */
            message: components["schemas"]["MessageWithParts"];
            session: {
                id: string;
                /** @enum {string} */
                status: "idle" | "queued" | "running" | "compacting" | "waiting" | "error";
            };
            /** @description What the agent answered */
            reply: {
                /** @description Assistant messages of the turn, oldest first */
                messages: components["schemas"]["MessageWithParts"][];
                /** @description Text of the last assistant message with text */
                text: string | null;
            };
        };
        /**
         * @description view=log: messages with their parts, oldest first; view=model: the next request
         * @example {
         *       "view": "log",
         *       "messages": [
         *         {
         *           "info": {
         *             "id": "msg_01JQ8ZA1",
         *             "sessionId": "ses_01JQ8Z9",
         *             "seq": 1,
         *             "time": {
         *               "created": 1777629600000
         *             },
         *             "role": "user",
         *             "agent": "researcher"
         *           },
         *           "parts": [
         *             {
         *               "id": "prt_01JQ8ZA2",
         *               "sessionId": "ses_01JQ8Z9",
         *               "messageId": "msg_01JQ8ZA1",
         *               "tokens": 9,
         *               "type": "text",
         *               "text": "What is the weather in Paris this weekend?"
         *             }
         *           ]
         *         },
         *         {
         *           "info": {
         *             "id": "msg_01JQ8ZA3",
         *             "sessionId": "ses_01JQ8Z9",
         *             "seq": 2,
         *             "time": {
         *               "created": 1777629600400,
         *               "completed": 1777629602100
         *             },
         *             "role": "assistant",
         *             "parentId": "msg_01JQ8ZA1",
         *             "finish": "stop",
         *             "usage": {
         *               "input": 812,
         *               "output": 24,
         *               "reasoning": 0,
         *               "cache": {
         *                 "read": 0,
         *                 "write": 0
         *               },
         *               "total": 836
         *             },
         *             "model": "openai/gpt-4.1-mini",
         *             "agent": "researcher",
         *             "step": 1
         *           },
         *           "parts": [
         *             {
         *               "id": "prt_01JQ8ZA4",
         *               "sessionId": "ses_01JQ8Z9",
         *               "messageId": "msg_01JQ8ZA3",
         *               "tokens": 14,
         *               "type": "text",
         *               "text": "Sunny on Saturday, showers on Sunday; 18–21 °C."
         *             }
         *           ]
         *         }
         *       ],
         *       "hasMore": false
         *     }
         */
        MessageHistory: {
            /** @constant */
            view: "log";
            messages: components["schemas"]["MessageWithParts"][];
            /** @description More messages lie beyond this page */
            hasMore: boolean;
        } | {
            /** @constant */
            view: "model";
            /** @description System blocks: the stable agent block, then per-message text */
            system: string[];
            /** @description AI SDK ModelMessages */
            messages: {
                /** @enum {string} */
                role: "system" | "user" | "assistant" | "tool";
                content: unknown;
            }[];
        };
        /**
         * @description The context gauge of a session, its compaction suggestion, boundary and compaction runs
         * @example {
         *       "sessionId": "ses_01JQ8Z9",
         *       "status": "idle",
         *       "model": "openai/gpt-4.1-mini",
         *       "limits": {
         *         "context": 128000,
         *         "output": 16384
         *       },
         *       "used": 31250,
         *       "usable": 111616,
         *       "trigger": 111616,
         *       "background": 89292,
         *       "percentOfTrigger": 28,
         *       "pruneWouldFree": {
         *         "parts": 0,
         *         "tokens": 0
         *       },
         *       "suggestion": {
         *         "shouldCompact": false,
         *         "estimatedSavings": 18400,
         *         "reason": "The next prompt (~31,250 tokens, 28% of the trigger) is below the background threshold (89,292); no compaction is needed."
         *       },
         *       "flags": {
         *         "autocompact": true,
         *         "prune": true
         *       },
         *       "boundary": {
         *         "seq": 41,
         *         "messageId": "msg_01JQ8ZK3W0",
         *         "summaryMessageId": "msg_01JQ8ZK9P2",
         *         "tailStartId": "msg_01JQ8ZJ7T5"
         *       },
         *       "compactions": [
         *         {
         *           "id": "cmp_01JQ8ZK3X1",
         *           "messageId": "msg_01JQ8ZK3W0",
         *           "summaryMessageId": "msg_01JQ8ZK9P2",
         *           "reason": "auto",
         *           "rung": "summary",
         *           "status": "completed",
         *           "tokensBefore": 109412,
         *           "tokensAfter": 9210,
         *           "headMessages": 38,
         *           "tailStartId": "msg_01JQ8ZJ7T5",
         *           "model": "openai/gpt-4.1-mini",
         *           "startedAt": "2026-05-01T10:02:03.000Z",
         *           "finishedAt": "2026-05-01T10:02:17.500Z",
         *           "durationMs": 14500,
         *           "requests": 1,
         *           "error": null,
         *           "reverted": false
         *         }
         *       ],
         *       "ratio": {
         *         "value": 1.02,
         *         "learned": true,
         *         "weight": 31250,
         *         "margin": 0.05
         *       },
         *       "estimates": []
         *     }
         */
        Context: {
            sessionId: string;
            /** @enum {string} */
            status: "idle" | "queued" | "running" | "compacting" | "waiting" | "error";
            /** @description The agent's model */
            model: string;
            /** @description The limits in effect: the agent's, else the model catalog's */
            limits: {
                context: number;
                input?: number;
                output: number;
            };
            /** @description Estimated provider tokens of the next prompt, anchored on the last provider report */
            used: number;
            /** @description Window available for input after the output reserve */
            usable: number;
            /** @description Compaction starts at this many tokens */
            trigger: number;
            /** @description An idle session above this is compacted in the background */
            background: number;
            /** @description used / trigger in percent (one decimal); 0 when the trigger is 0 */
            percentOfTrigger: number;
            /** @description Zero when pruning is off */
            pruneWouldFree: {
                /** @description Tool outputs the prune job would clear now */
                parts: number;
                /** @description Provider tokens that would free (placeholders subtracted) */
                tokens: number;
            };
            /** @description Whether the session should compact now, and why (docs/context.md §2) */
            suggestion: {
                /** @description used is at or above the background threshold (or the trigger) */
                shouldCompact: boolean;
                /** @description Provider tokens a prune plus a summary compaction would remove now: the prune above, plus the summarised head minus the expected summary, min(2,000, head / 10) */
                estimatedSavings: number;
                reason: string;
            };
            /** @description The switches in effect for this session */
            flags: {
                /** @description compaction.auto and not LOOPLINE_DISABLE_AUTOCOMPACT */
                autocompact: boolean;
                /** @description compaction.prune and not LOOPLINE_DISABLE_PRUNE */
                prune: boolean;
            };
            boundary: {
                /** @description Where the model view starts loading: the first kept tail message, else the compaction message */
                seq: number;
                /** @description The compaction message of the newest completed boundary */
                messageId: string;
                summaryMessageId: string;
                /** @description First message kept verbatim, if a tail was kept */
                tailStartId: string | null;
            } | null;
            /** @description Every compaction run, oldest first, reverted ones marked */
            compactions: components["schemas"]["CompactionRecord"][];
            /** @description The session's provider-to-tiktoken ratio (carried across compactions) */
            ratio: {
                /** @description Provider tokens per tiktoken token: learned from reports, else the prior */
                value: number;
                learned: boolean;
                /** @description tiktoken tokens of the reports it was learned from */
                weight: number;
                /** @description Relative margin the fit and overflow checks add to the tiktoken-measured part */
                margin: number;
            };
            /** @description Per model step, oldest first: the pre-call estimate beside the prompt the provider reported */
            estimates: {
                step: number;
                messageId: string | null;
                outcome: string | null;
                /** @description Best guess of the prompt, provider tokens */
                estimate: number;
                /** @description With the margin: what the checks used */
                bound: number;
                /** @description Built on the previous report; false = tiktoken × ratio alone (also: no usage reported) */
                anchored: boolean;
                ratio: number;
                /** @description Prompt tokens the provider reported (input + cache); null or 0 when it reported none */
                reported: number | null;
                /** @description (estimate − reported) / reported × 100, one decimal; null without a report */
                errorPercent: number | null;
            }[];
        };
        /**
         * @description What the revert hid, and the session after it
         * @example {
         *       "reverted": 6,
         *       "fromSeq": 12,
         *       "session": {
         *         "id": "ses_01JQ8Z9",
         *         "agent": "researcher",
         *         "status": "idle",
         *         "statusDetail": null,
         *         "error": null,
         *         "title": null,
         *         "stepCount": 9,
         *         "parentSessionId": null,
         *         "compaction": {
         *           "count": 0,
         *           "lastAt": null,
         *           "last": null
         *         },
         *         "tokens": {
         *           "used": 5120,
         *           "usable": 111616,
         *           "trigger": 111616,
         *           "background": 89292
         *         },
         *         "metadata": {},
         *         "createdAt": "2026-05-01T10:00:00.000Z",
         *         "updatedAt": "2026-05-01T10:05:00.000Z"
         *       }
         *     }
         */
        RevertResult: {
            /** @description Messages hidden by this revert (0 when they already were) */
            reverted: number;
            /** @description Every message from this seq on is hidden; lower than the message's own seq when the revert took a whole compaction point with it */
            fromSeq: number;
            session: components["schemas"]["Session"];
        };
        /**
         * @description What the abort request did
         * @example {
         *       "aborted": true,
         *       "sessionIds": [
         *         "ses_01JQ8Z9",
         *         "ses_01JQ8ZD3"
         *       ],
         *       "session": {
         *         "id": "ses_01JQ8Z9",
         *         "status": "running"
         *       }
         *     }
         */
        AbortResult: {
            /** @description true: the turn is being stopped; false: the session was idle or error (nothing to abort) */
            aborted: boolean;
            /** @description Sessions the abort was recorded on: the session and its running child sessions (subagents) */
            sessionIds: string[];
            /** @description The session as the request found it */
            session: {
                id: string;
                /** @enum {string} */
                status: "idle" | "queued" | "running" | "compacting" | "waiting" | "error";
            };
        };
        /**
         * @description Results written; the session resumes
         * @example {
         *       "parts": [
         *         {
         *           "id": "prt_01JQ8ZC1",
         *           "sessionId": "ses_01JQ8Z9",
         *           "messageId": "msg_01JQ8ZC0",
         *           "tokens": 42,
         *           "type": "tool",
         *           "callId": "call_7Hq2",
         *           "tool": "pick_file",
         *           "state": {
         *             "status": "completed",
         *             "input": {
         *               "pattern": "*.txt"
         *             },
         *             "output": "{\"files\": [\"a.txt\", \"b.txt\"]}",
         *             "title": "",
         *             "metadata": {
         *               "awaiting": "client"
         *             },
         *             "time": {
         *               "start": 1777630000000,
         *               "end": 1777630004000
         *             }
         *           }
         *         }
         *       ],
         *       "session": {
         *         "id": "ses_01JQ8Z9",
         *         "status": "queued"
         *       }
         *     }
         */
        ToolResultsResult: {
            /** @description The tool parts as written */
            parts: components["schemas"]["Part"][];
            /** @description The session, queued again */
            session: {
                id: string;
                /** @enum {string} */
                status: "idle" | "queued" | "running" | "compacting" | "waiting" | "error";
            };
        };
        /**
         * @description Everything stored for the session is gone
         * @example {
         *       "deleted": true,
         *       "sessionIds": [
         *         "ses_01JQ8Z9"
         *       ]
         *     }
         */
        DeletedSession: {
            /** @constant */
            deleted: true;
            /** @description The session and every child session deleted with it */
            sessionIds: string[];
        };
        /**
         * @description The definition is gone
         * @example {
         *       "deleted": true,
         *       "name": "researcher"
         *     }
         */
        DeletedDefinition: {
            /** @constant */
            deleted: true;
            name: string;
        };
        /**
         * @description A batch and its progress
         * @example {
         *       "id": "bat_01JQ8ZD",
         *       "agent": "assistant",
         *       "status": "running",
         *       "total": 200,
         *       "counts": {
         *         "queued": 150,
         *         "running": 16,
         *         "completed": 33,
         *         "failed": 1,
         *         "cancelled": 0
         *       },
         *       "metadata": {},
         *       "createdAt": "2026-05-01T10:00:00.000Z",
         *       "updatedAt": "2026-05-01T10:00:00.000Z",
         *       "cancelledAt": null,
         *       "completedAt": null
         *     }
         */
        Batch: {
            id: string;
            agent: string;
            /**
             * @description completed once every conversation finished; cancelled by POST …/cancel
             * @enum {string}
             */
            status: "running" | "completed" | "cancelled";
            total: number;
            /** @description Conversations by state */
            counts: {
                /** @description Not started, or waiting for a worker, a tenant slot or token budget */
                queued: number;
                running: number;
                completed: number;
                failed: number;
                cancelled: number;
            };
            /** @description Free-form JSON, returned as is */
            metadata: {
                [key: string]: unknown;
            };
            /** @description ISO 8601 timestamp */
            createdAt: string;
            /** @description ISO 8601 timestamp */
            updatedAt: string;
            cancelledAt: string | null;
            completedAt: string | null;
        };
        /**
         * @description A tenant, its limits and its API keys
         * @example {
         *       "id": "ten_01JQ8Z0",
         *       "name": "acme",
         *       "createdAt": "2026-05-01T10:00:00.000Z",
         *       "limits": {
         *         "maxConcurrentSessions": 3,
         *         "tokensPerMinute": 200000,
         *         "requestsPerMinute": 600
         *       },
         *       "keys": [
         *         {
         *           "id": "key_01JQ8Z1",
         *           "prefix": "ll_9fQz3",
         *           "createdAt": "2026-05-01T10:00:00.000Z",
         *           "revokedAt": null
         *         }
         *       ]
         *     }
         */
        Tenant: {
            id: string;
            name: string;
            /** @description ISO 8601 timestamp */
            createdAt: string;
            /** @description Limits set for the tenant; an absent one is the deployment default (LOOPLINE_MAX_CONCURRENT_SESSIONS, LOOPLINE_TOKENS_PER_MINUTE, LOOPLINE_RATE_LIMIT_PER_MINUTE) */
            limits: {
                maxConcurrentSessions?: number;
                tokensPerMinute?: number;
                requestsPerMinute?: number;
            };
            /** @description Every API key of the tenant, oldest first (the keys themselves are never shown again) */
            keys: {
                id: string;
                /** @description First 8 characters of the key */
                prefix: string;
                /** @description ISO 8601 timestamp */
                createdAt: string;
                revokedAt: string | null;
            }[];
        };
        /**
         * @description The new tenant and its first API key
         * @example {
         *       "tenant": {
         *         "id": "ten_01JQ8Z0",
         *         "name": "acme",
         *         "createdAt": "2026-05-01T10:00:00.000Z"
         *       },
         *       "apiKey": "ll_9fQz3kT7xWmB2cR8vYp4LhN6sJd1GaE5",
         *       "keyId": "key_01JQ8Z1"
         *     }
         */
        CreatedTenant: {
            tenant: {
                id: string;
                name: string;
                /** @description ISO 8601 timestamp */
                createdAt: string;
            };
            /** @description The API key. Shown once: only its hash is stored */
            apiKey: string;
            /** @description Id of the key, for revocation */
            keyId: string;
        };
        /**
         * @description A new API key of the tenant
         * @example {
         *       "tenantId": "ten_01JQ8Z0",
         *       "apiKey": "ll_9fQz3kT7xWmB2cR8vYp4LhN6sJd1GaE5",
         *       "keyId": "key_01JQ8Z2"
         *     }
         */
        CreatedApiKey: {
            tenantId: string;
            /** @description The API key. Shown once: only its hash is stored */
            apiKey: string;
            keyId: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The process answers */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {string} */
                        status: "ok";
                    };
                };
            };
        };
    };
    getReadiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Readiness of the gateway and its dependencies */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {string} */
                        status: "ok" | "unavailable";
                        /** @description Each dependency, checked with a 2 s timeout */
                        checks: {
                            /** @description Redis answered PING */
                            redis: boolean;
                            /** @description PostgreSQL answered `select 1` */
                            postgres: boolean;
                        };
                    };
                };
            };
            /** @description Readiness of the gateway and its dependencies */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {string} */
                        status: "ok" | "unavailable";
                        /** @description Each dependency, checked with a 2 s timeout */
                        checks: {
                            /** @description Redis answered PING */
                            redis: boolean;
                            /** @description PostgreSQL answered `select 1` */
                            postgres: boolean;
                        };
                    };
                };
            };
        };
    };
    getMetrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus text */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createTenant: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Display name of the tenant */
                    name: string;
                };
            };
        };
        responses: {
            /** @description The new tenant and its first API key */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedTenant"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getTenant: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id (ten_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A tenant, its limits and its API keys */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tenant"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    updateTenant: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id (ten_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description maxConcurrentSessions: sessions running at once (others wait, status queued); tokensPerMinute: model tokens per minute (calls wait for budget); requestsPerMinute: API requests per key per minute (429 over it). A number sets a limit, null removes it, an absent key is left as it is */
                    limits: {
                        maxConcurrentSessions?: number | null;
                        tokensPerMinute?: number | null;
                        requestsPerMinute?: number | null;
                    };
                };
            };
        };
        responses: {
            /** @description A tenant, its limits and its API keys */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tenant"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id (ten_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A new API key of the tenant */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedApiKey"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    revokeApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Tenant id (ten_…) */
                id: string;
                /** @description API key id (key_…) */
                keyId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Revoked */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getAgent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Agent or tool name: letters, digits, "_" and "-", 1–64 characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description An agent: its name and stored configuration (defaults filled in) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Agent"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    putAgent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Agent or tool name: letters, digits, "_" and "-", 1–64 characters */
                name: string;
            };
            cookie?: never;
        };
        /** @description Agent configuration (core AgentConfig); omitted fields take their defaults */
        requestBody: {
            content: {
                "application/json": {
                    model: string;
                    /** Format: uri */
                    baseURL?: string;
                    system?: string;
                    /** @default [] */
                    tools?: string[];
                    limits?: {
                        context: number;
                        input?: number;
                        output: number;
                    };
                    /** @default 50 */
                    maxSteps?: number;
                    temperature?: number;
                    /**
                     * @default primary
                     * @enum {string}
                     */
                    mode?: "primary" | "subagent" | "all";
                    /**
                     * @default steer
                     * @enum {string}
                     */
                    midRunMessages?: "steer" | "queue";
                    /**
                     * @default {
                     *       "auto": true,
                     *       "prune": true,
                     *       "backgroundRatio": 0.8,
                     *       "backgroundDelayMs": 30000,
                     *       "tailTurns": 2,
                     *       "extraContext": [],
                     *       "maxIterations": 3,
                     *       "maxCompactionsPerTurn": 0,
                     *       "growthMargin": 0.1,
                     *       "protectedTools": [
                     *         "skill"
                     *       ],
                     *       "pruneProtectSteps": 3
                     *     }
                     */
                    compaction?: {
                        /** @default true */
                        auto?: boolean;
                        /** @default true */
                        prune?: boolean;
                        reserved?: number;
                        triggerRatio?: number;
                        /** @default 0.8 */
                        backgroundRatio?: number;
                        /** @default 30000 */
                        backgroundDelayMs?: number;
                        /** @default 2 */
                        tailTurns?: number;
                        preserveRecentTokens?: number;
                        prompt?: string;
                        /** @default [] */
                        extraContext?: string[];
                        model?: string;
                        /** @default 3 */
                        maxIterations?: number;
                        /** @default 0 */
                        maxCompactionsPerTurn?: number;
                        /** @default 0.1 */
                        growthMargin?: number;
                        /**
                         * @default [
                         *       "skill"
                         *     ]
                         */
                        protectedTools?: string[];
                        /** @default 3 */
                        pruneProtectSteps?: number;
                        pruneProtect?: number;
                        pruneMinimum?: number;
                    };
                    /**
                     * @default {
                     *       "maxLines": 2000,
                     *       "maxBytes": 51200,
                     *       "direction": "head",
                     *       "windowShare": 0.25,
                     *       "retentionDays": 30
                     *     }
                     */
                    toolOutput?: {
                        /** @default 2000 */
                        maxLines?: number;
                        /** @default 51200 */
                        maxBytes?: number;
                        /**
                         * @default head
                         * @enum {string}
                         */
                        direction?: "head" | "tail";
                        /** @default 0.25 */
                        windowShare?: number;
                        /** @default 30 */
                        retentionDays?: number;
                    };
                    /** @default false */
                    resendsReasoning?: boolean;
                    /** @enum {string} */
                    server?: "openai" | "vllm" | "llamacpp" | "ollama" | "lmstudio" | "tgi" | "generic";
                    capabilities?: {
                        /** @enum {string} */
                        tools?: "auto" | "none";
                        usageInStream?: boolean;
                        strictAlternation?: boolean;
                        systemRole?: boolean;
                        maxOutput?: number;
                    };
                    /** @enum {string} */
                    tokenizer?: "openai" | "claude" | "gemini" | "llama" | "deepseek" | "qwen" | "mistral";
                    titleModel?: string;
                    /** @description Write-only: the key for the agent's own `baseURL`, stored encrypted and never returned. Required with a new baseURL; omitted, the stored key for the same baseURL is kept. */
                    apiKey?: string;
                };
            };
        };
        responses: {
            /** @description An agent: its name and stored configuration (defaults filled in) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Agent"];
                };
            };
            /** @description An agent: its name and stored configuration (defaults filled in) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Agent"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteAgent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Agent or tool name: letters, digits, "_" and "-", 1–64 characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The definition is gone */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletedDefinition"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listAgents: {
        parameters: {
            query?: {
                /** @description Page size (1–1000); without it every one is returned (at most the tenant cap: 500 agents, 1,000 tools) */
                limit?: number;
                /** @description nextCursor of the previous page: the names after it (with limit, a page of them) */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tenant's agents by name: all of them, or a page of `limit` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentList"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getTool: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Agent or tool name: letters, digits, "_" and "-", 1–64 characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A tool: its name and stored configuration (defaults filled in) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tool"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    putTool: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Agent or tool name: letters, digits, "_" and "-", 1–64 characters */
                name: string;
            };
            cookie?: never;
        };
        /** @description Tool configuration: a webhook the worker calls, or a client tool the caller answers */
        requestBody: {
            content: {
                "application/json": {
                    /** @enum {string} */
                    kind: "webhook";
                    /** @default  */
                    description?: string;
                    /** @description JSON Schema of the tool input; must be an object schema */
                    inputSchema: {
                        /** @enum {string} */
                        type: "object";
                    } & {
                        [key: string]: unknown;
                    };
                    /** Format: uri */
                    url: string;
                    /** @default 30000 */
                    timeoutMs?: number;
                    /** @default {} */
                    headers?: {
                        [key: string]: string;
                    };
                    maxResponseBytes?: number;
                } | {
                    /** @enum {string} */
                    kind: "client";
                    /** @default  */
                    description?: string;
                    /** @description JSON Schema of the tool input; must be an object schema */
                    inputSchema: {
                        /** @enum {string} */
                        type: "object";
                    } & {
                        [key: string]: unknown;
                    };
                    timeoutMs?: number;
                };
            };
        };
        responses: {
            /** @description The tool as stored, with its new signing secret when it just got one */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        name: string;
                        config: {
                            /** @enum {string} */
                            kind: "webhook";
                            /** @default  */
                            description: string;
                            /** @description JSON Schema of the tool input; must be an object schema */
                            inputSchema: {
                                /** @enum {string} */
                                type: "object";
                            } & {
                                [key: string]: unknown;
                            };
                            /** Format: uri */
                            url: string;
                            /** @default 30000 */
                            timeoutMs: number;
                            /** @default {} */
                            headers: {
                                [key: string]: string;
                            };
                            maxResponseBytes?: number;
                        } | {
                            /** @enum {string} */
                            kind: "client";
                            /** @default  */
                            description: string;
                            /** @description JSON Schema of the tool input; must be an object schema */
                            inputSchema: {
                                /** @enum {string} */
                                type: "object";
                            } & {
                                [key: string]: unknown;
                            };
                            timeoutMs?: number;
                        };
                        /** @description Bumped by every update */
                        version: number;
                        /** @description ISO 8601 timestamp */
                        createdAt: string;
                        /** @description ISO 8601 timestamp */
                        updatedAt: string;
                        /** @description The webhook signing secret (`whsec_…`), present only in the response that created it: store it, it is never shown again. Verify `webhook-signature` with it (README, docs/security.md). */
                        signingSecret?: string;
                    };
                };
            };
            /** @description The tool as stored, with its new signing secret when it just got one */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        name: string;
                        config: {
                            /** @enum {string} */
                            kind: "webhook";
                            /** @default  */
                            description: string;
                            /** @description JSON Schema of the tool input; must be an object schema */
                            inputSchema: {
                                /** @enum {string} */
                                type: "object";
                            } & {
                                [key: string]: unknown;
                            };
                            /** Format: uri */
                            url: string;
                            /** @default 30000 */
                            timeoutMs: number;
                            /** @default {} */
                            headers: {
                                [key: string]: string;
                            };
                            maxResponseBytes?: number;
                        } | {
                            /** @enum {string} */
                            kind: "client";
                            /** @default  */
                            description: string;
                            /** @description JSON Schema of the tool input; must be an object schema */
                            inputSchema: {
                                /** @enum {string} */
                                type: "object";
                            } & {
                                [key: string]: unknown;
                            };
                            timeoutMs?: number;
                        };
                        /** @description Bumped by every update */
                        version: number;
                        /** @description ISO 8601 timestamp */
                        createdAt: string;
                        /** @description ISO 8601 timestamp */
                        updatedAt: string;
                        /** @description The webhook signing secret (`whsec_…`), present only in the response that created it: store it, it is never shown again. Verify `webhook-signature` with it (README, docs/security.md). */
                        signingSecret?: string;
                    };
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteTool: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Agent or tool name: letters, digits, "_" and "-", 1–64 characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The definition is gone */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletedDefinition"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listTools: {
        parameters: {
            query?: {
                /** @description Page size (1–1000); without it every one is returned (at most the tenant cap: 500 agents, 1,000 tools) */
                limit?: number;
                /** @description nextCursor of the previous page: the names after it (with limit, a page of them) */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tenant's tools by name: all of them, or a page of `limit` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ToolList"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listSessions: {
        parameters: {
            query?: {
                /** @description Only these statuses, comma-separated (e.g. running,waiting) */
                status?: string;
                /** @description Only this agent */
                agent?: string;
                /** @description Only sessions whose metadata contains this JSON object (every key equal), e.g. {"userId":"u-42"} */
                metadata?: string;
                /** @description Only child sessions (subagents) of this session */
                parent?: string;
                /** @description Only sessions created after this instant */
                createdAfter?: string;
                /** @description Only sessions created before this instant */
                createdBefore?: string;
                /** @description Page size (1–200, default 50) */
                limit?: number;
                /** @description nextCursor of the previous page */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of sessions, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionList"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createSession: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Name of an agent defined with PUT /v1/agents/:name */
                    agent: string;
                    /** @description Per-session changes merged over the agent configuration (objects merge field by field) */
                    overrides?: {
                        model?: string;
                        system?: string;
                        tools?: string[];
                        limits?: {
                            context: number;
                            input?: number;
                            output: number;
                        };
                        maxSteps?: number;
                        temperature?: number;
                        /** @enum {string} */
                        midRunMessages?: "steer" | "queue";
                        compaction?: {
                            auto?: boolean;
                            prune?: boolean;
                            reserved?: number;
                            triggerRatio?: number;
                            backgroundRatio?: number;
                            backgroundDelayMs?: number;
                            tailTurns?: number;
                            preserveRecentTokens?: number;
                            prompt?: string;
                            extraContext?: string[];
                            model?: string;
                            maxIterations?: number;
                            maxCompactionsPerTurn?: number;
                            growthMargin?: number;
                            protectedTools?: string[];
                            pruneProtectSteps?: number;
                            pruneProtect?: number;
                            pruneMinimum?: number;
                        };
                        toolOutput?: {
                            maxLines?: number;
                            maxBytes?: number;
                            /** @enum {string} */
                            direction?: "head" | "tail";
                            windowShare?: number;
                            retentionDays?: number;
                        };
                        resendsReasoning?: boolean;
                        titleModel?: string;
                    };
                    /** @description Free-form JSON kept with the session, returned as is */
                    metadata?: {
                        [key: string]: unknown;
                    };
                };
            };
        };
        responses: {
            /** @description A session: status, title, token gauge and compactions */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Session"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session id (ses_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A session: status, title, token gauge and compactions */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Session"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteSession: {
        parameters: {
            query?: {
                /** @description true: abort a running turn first (and wait, up to about 10 s, for it to stop) */
                force?: "true" | "false";
            };
            header?: never;
            path: {
                /** @description Session id (ses_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Everything stored for the session is gone */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletedSession"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listChildSessions: {
        parameters: {
            query?: {
                /** @description Page size (1–200, default 50) */
                limit?: number;
                /** @description nextCursor of the previous page */
                cursor?: string;
            };
            header?: never;
            path: {
                /** @description Session id (ses_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of sessions, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionList"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listMessages: {
        parameters: {
            query?: {
                /** @description log: the full append-only history; model: exactly what the model would see next */
                view?: "log" | "model";
                /** @description view=log: only messages with a greater seq */
                after?: number;
                /** @description view=log: only messages with a smaller seq (the newest of them first in page) */
                before?: number;
                /** @description view=log: at most this many messages (1–1000; without it, a page of 1000); with before, the newest ones before it */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description Session id (ses_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description view=log: messages with their parts, oldest first; view=model: the next request */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MessageHistory"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    sendMessage: {
        parameters: {
            query?: never;
            header?: {
                /** @description Retries with the same key and body return the first response and write nothing */
                "idempotency-key"?: string;
                /** @description wait=N (seconds, at most 120): answer 200 with the finished turn if it ends within N s */
                prefer?: string;
            };
            path: {
                /** @description Session id (ses_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description The user message (1 byte to 1 MiB of UTF-8) */
                    text: string;
                    /** @description Attachments sent with the text */
                    files?: {
                        /**
                         * Format: uri
                         * @description http(s) or data: URL of the file
                         */
                        url: string;
                        /** @description Media type, e.g. image/png */
                        mime: string;
                        filename?: string;
                    }[];
                    /** @description Extra system text for this message */
                    system?: string;
                };
            };
        };
        responses: {
            /** @description The message was stored and its turn finished within the Prefer: wait time */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FinishedTurn"];
                };
            };
            /** @description The message was stored and the session woken */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AcceptedMessage"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    streamEvents: {
        parameters: {
            query?: {
                /** @description Resume after this stream id (same as the Last-Event-ID header, which wins) */
                after?: string;
            };
            header?: {
                /** @description Stream id of the last event received */
                "last-event-id"?: string;
            };
            path: {
                /** @description Session id (ses_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description text/event-stream of session events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": {
                        /** @enum {string} */
                        type: "session.status";
                        /** @enum {string} */
                        status: "idle" | "queued" | "running" | "compacting" | "waiting" | "error";
                        detail?: string;
                    } | {
                        /** @enum {string} */
                        type: "message.updated";
                        message: components["schemas"]["Message"];
                    } | {
                        /** @enum {string} */
                        type: "part.updated";
                        part: components["schemas"]["Part"];
                    } | {
                        /** @enum {string} */
                        type: "part.delta";
                        messageId: string;
                        partId: string;
                        /** @enum {string} */
                        field: "text" | "reasoning";
                        delta: string;
                    } | {
                        /** @enum {string} */
                        type: "session.compacted";
                        compactionId: string;
                        auto: boolean;
                        rung: string;
                        tokensBefore: number;
                        tokensAfter: number;
                    } | {
                        /** @enum {string} */
                        type: "session.pruned";
                        parts: number;
                        tokens: number;
                    } | {
                        /** @enum {string} */
                        type: "session.reverted";
                        messageId: string;
                        fromSeq: number;
                        reverted: number;
                        boundarySeq: number | null;
                    } | {
                        /** @enum {string} */
                        type: "session.error";
                        error: components["schemas"]["ErrorData"];
                    } | {
                        /** @enum {string} */
                        type: "session.idle";
                    } | {
                        /** @enum {string} */
                        type: "event.clipped";
                        event: string;
                        bytes: number;
                        messageId?: string;
                        partId?: string;
                        partType?: string;
                        callId?: string;
                        status?: string;
                    };
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    compactSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session id (ses_…) */
                id: string;
            };
            cookie?: never;
        };
        /** @description Optional: extra instructions for this summary */
        requestBody: {
            content: {
                "application/json": {
                    /** @description Added to the summary prompt */
                    instructions?: string;
                } | null;
            };
        };
        responses: {
            /** @description The message was stored and the session woken */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AcceptedMessage"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getContext: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session id (ses_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The context gauge of a session, its compaction suggestion, boundary and compaction runs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Context"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    revertSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session id (ses_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description The first message to hide; it and everything after it leave the model view */
                    messageId: string;
                };
            };
        };
        responses: {
            /** @description What the revert hid, and the session after it */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RevertResult"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    abortSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session id (ses_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description What the abort request did */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AbortResult"];
                };
            };
            /** @description What the abort request did */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AbortResult"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    submitToolResults: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session id (ses_…) */
                id: string;
            };
            cookie?: never;
        };
        /** @description Results of client tool calls */
        requestBody: {
            content: {
                "application/json": {
                    /** @description One result per call (any subset of the pending calls) */
                    results: {
                        /** @description A pending call id from pendingToolCalls */
                        callId: string;
                        /** @description The result the model sees */
                        output?: string;
                        /** @description The call failed: the model sees this */
                        error?: string;
                    }[];
                };
            };
        };
        responses: {
            /** @description Results written; the session resumes */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ToolResultsResult"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createBatch: {
        parameters: {
            query?: {
                /** @description The agent of a JSONL upload */
                agent?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description A batch as JSON. Or upload JSONL (content-type application/x-ndjson, agent in ?agent=): one conversation object per line */
        requestBody: {
            content: {
                "application/json": {
                    /** @description Name of an agent defined with PUT /v1/agents/:name */
                    agent: string;
                    /** @description At most 10,000 conversations (LOOPLINE_BATCH_MAX_CONVERSATIONS) */
                    conversations: {
                        /** @description User messages, posted in order: each one after the session answered the one before */
                        messages: (string | {
                            text: string;
                        })[];
                        /** @description Kept on the conversation's session and in its result line */
                        metadata?: {
                            [key: string]: unknown;
                        };
                    }[];
                    /** @description Kept with the batch */
                    metadata?: {
                        [key: string]: unknown;
                    };
                };
            };
        };
        responses: {
            /** @description A batch and its progress */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Batch"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getBatch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Batch id (bat_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A batch and its progress */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Batch"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getBatchResults: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Batch id (bat_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description JSONL results */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/x-ndjson": string;
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    cancelBatch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Batch id (bat_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A batch and its progress */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Batch"];
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getV1WebhooksName: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Agent or tool name: letters, digits, "_" and "-", 1–64 characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A webhook subscription (its secret is never shown again) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        name: string;
                        url: string;
                        events: ("session.idle" | "session.error" | "session.waiting" | "compaction.completed" | "batch.completed")[];
                        enabled: boolean;
                        /** @description ISO 8601 timestamp */
                        createdAt: string;
                        /** @description ISO 8601 timestamp */
                        updatedAt: string;
                    };
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    putV1WebhooksName: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Agent or tool name: letters, digits, "_" and "-", 1–64 characters */
                name: string;
            };
            cookie?: never;
        };
        /** @description A webhook subscription */
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * Format: uri
                     * @description Where the events are POSTed (http or https; the same egress rules as webhook tools)
                     */
                    url: string;
                    /** @description The event types to deliver */
                    events: ("session.idle" | "session.error" | "session.waiting" | "compaction.completed" | "batch.completed")[];
                    /**
                     * @description A disabled subscription gets no new deliveries
                     * @default true
                     */
                    enabled?: boolean;
                    /**
                     * @description Replace the signing secret of an existing subscription (returned once, like the first)
                     * @default false
                     */
                    rotateSecret?: boolean;
                };
            };
        };
        responses: {
            /** @description The saved subscription; its signing secret when it was just created or rotated */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        name: string;
                        url: string;
                        events: ("session.idle" | "session.error" | "session.waiting" | "compaction.completed" | "batch.completed")[];
                        enabled: boolean;
                        /** @description ISO 8601 timestamp */
                        createdAt: string;
                        /** @description ISO 8601 timestamp */
                        updatedAt: string;
                        /** @description The Standard Webhooks signing secret (`whsec_…`), present only when it was just created or rotated */
                        secret?: string;
                    };
                };
            };
            /** @description The saved subscription; its signing secret when it was just created or rotated */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        name: string;
                        url: string;
                        events: ("session.idle" | "session.error" | "session.waiting" | "compaction.completed" | "batch.completed")[];
                        enabled: boolean;
                        /** @description ISO 8601 timestamp */
                        createdAt: string;
                        /** @description ISO 8601 timestamp */
                        updatedAt: string;
                        /** @description The Standard Webhooks signing secret (`whsec_…`), present only when it was just created or rotated */
                        secret?: string;
                    };
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteV1WebhooksName: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Agent or tool name: letters, digits, "_" and "-", 1–64 characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {boolean} */
                        deleted: true;
                    };
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getV1Webhooks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every webhook subscription of the tenant */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        webhooks: {
                            name: string;
                            url: string;
                            events: ("session.idle" | "session.error" | "session.waiting" | "compaction.completed" | "batch.completed")[];
                            enabled: boolean;
                            /** @description ISO 8601 timestamp */
                            createdAt: string;
                            /** @description ISO 8601 timestamp */
                            updatedAt: string;
                        }[];
                    };
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getV1WebhooksNameDeliveries: {
        parameters: {
            query?: {
                /** @description How many (newest first), 1–500 */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description Agent or tool name: letters, digits, "_" and "-", 1–64 characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deliveries of the subscription, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        deliveries: {
                            id: string;
                            /** @description Stable across retries and re-deliveries (the `webhook-id` header) */
                            eventId: string;
                            /**
                             * @description An event a subscription can receive
                             * @enum {string}
                             */
                            eventType: "session.idle" | "session.error" | "session.waiting" | "compaction.completed" | "batch.completed";
                            /** @enum {string} */
                            status: "pending" | "delivered" | "failed";
                            /** @description HTTP attempts so far */
                            attempts: number;
                            /** @description HTTP status of the last attempt */
                            lastStatus: number | null;
                            /** @description Why the last attempt failed */
                            lastError: string | null;
                            /** @description The request body */
                            payload: {
                                [key: string]: unknown;
                            };
                            /** @description ISO 8601 timestamp */
                            createdAt: string;
                            deliveredAt: string | null;
                        }[];
                    };
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    postV1WebhooksNameDeliveriesIdRedeliver: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Subscription name */
                name: string;
                /** @description Delivery id (whd_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The delivery, pending again */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * @description One event sent (or being sent) to one subscription
                         * @example {
                         *       "id": "whd_5f0c2a9e1b7d4c3a8e6f0b1d",
                         *       "eventId": "evt_2b8f0d6c4a1e9f7b3c5d0a2e4f6b8d1c",
                         *       "eventType": "session.idle",
                         *       "status": "delivered",
                         *       "attempts": 1,
                         *       "lastStatus": 200,
                         *       "lastError": null,
                         *       "payload": {
                         *         "id": "evt_2b8f0d6c4a1e9f7b3c5d0a2e4f6b8d1c",
                         *         "type": "session.idle",
                         *         "timestamp": "2026-05-01T09:00:01.000Z",
                         *         "data": {
                         *           "tenantId": "ten_0lq7w2k3a9x1f3bq8vwz2c",
                         *           "sessionId": "ses_0lq7w2k3a9x1f3bq8vwz2c"
                         *         }
                         *       },
                         *       "createdAt": "2026-05-01T09:00:01.000Z",
                         *       "deliveredAt": "2026-05-01T09:00:01.200Z"
                         *     }
                         */
                        delivery: {
                            id: string;
                            /** @description Stable across retries and re-deliveries (the `webhook-id` header) */
                            eventId: string;
                            /**
                             * @description An event a subscription can receive
                             * @enum {string}
                             */
                            eventType: "session.idle" | "session.error" | "session.waiting" | "compaction.completed" | "batch.completed";
                            /** @enum {string} */
                            status: "pending" | "delivered" | "failed";
                            /** @description HTTP attempts so far */
                            attempts: number;
                            /** @description HTTP status of the last attempt */
                            lastStatus: number | null;
                            /** @description Why the last attempt failed */
                            lastError: string | null;
                            /** @description The request body */
                            payload: {
                                [key: string]: unknown;
                            };
                            /** @description ISO 8601 timestamp */
                            createdAt: string;
                            deliveredAt: string | null;
                        };
                    };
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    chat: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description DefaultChatTransport request body */
        requestBody: {
            content: {
                "application/json": {
                    /** @description The chat id: a Loopline session id (ses_…) */
                    id: string;
                    /** @description The UI messages; only the last one is read (the new user message, or tool results) */
                    messages: ({
                        /** @description UI message id: the idempotency key of the user message */
                        id: string;
                        /** @enum {string} */
                        role: "user" | "assistant" | "system";
                        parts: ({
                            type: string;
                        } & {
                            [key: string]: unknown;
                        })[];
                    } & {
                        [key: string]: unknown;
                    })[];
                    /**
                     * @description submit-message only: the history is append-only (regenerate with POST …/revert)
                     * @default submit-message
                     * @enum {string}
                     */
                    trigger?: "submit-message" | "regenerate-message";
                    /** @description Set by regenerate-message (not supported) */
                    messageId?: string;
                } & {
                    [key: string]: unknown;
                };
            };
        };
        responses: {
            /** @description The turn as a UI message stream */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    resumeChatStream: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The chat id: a Loopline session id (ses_…) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The running turn as a UI message stream */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description No turn is running */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listAllSessions: {
        parameters: {
            query?: {
                /** @description Only this tenant */
                tenant?: string;
                /** @description Only this status */
                status?: "idle" | "queued" | "running" | "compacting" | "waiting" | "error";
                /** @description At most this many (1–500, default 50) */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Sessions of every tenant, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        sessions: {
                            id: string;
                            tenantId: string;
                            tenantName: string;
                            agent: string;
                            model: string;
                            /** @enum {string} */
                            status: "idle" | "queued" | "running" | "compacting" | "waiting" | "error";
                            title: string | null;
                            stepCount: number;
                            compactionCount: number;
                            lastSeq: number;
                            createdAt: string;
                            updatedAt: string;
                        }[];
                    };
                };
            };
            /** @description Every error response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    inspectSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Session id (ses_…), of any tenant */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The session with its history, steps (attempts, fences, usage), compaction runs and the token gauge over time */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        [key: string]: unknown;
                    };
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
            /** @description Every error response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getInspectorPage: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description HTML page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            /** @description Every error response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Problem"];
                };
            };
        };
    };
}
