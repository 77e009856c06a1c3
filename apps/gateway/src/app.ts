import { redactUrl } from '@loopline/core';
import Fastify, { type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { GatewayDeps } from './deps.ts';
import { inspectorPlugin } from './inspector/index.ts';
import { sessionStreams } from './lib/streams.ts';
import { createGatewayMetrics } from './metrics.ts';
import { operatorAuth, sameSecret, tenantAuth } from './plugins/auth.ts';
import { bullBoardPlugin } from './plugins/bull-board.ts';
import { registerCors } from './plugins/cors.ts';
import { decorateDeps } from './plugins/deps.ts';
import { installErrorHandling, sendProblem, toProblem } from './plugins/errors.ts';
import { withRedaction } from './plugins/log-redaction.ts';
import { installRequestMetrics, metricsRoutes } from './plugins/metrics.ts';
import { registerOpenApi } from './plugins/openapi.ts';
import { operatorLoginRoutes } from './plugins/operator-session.ts';
import { registerRateLimit } from './plugins/rate-limit.ts';
import { genReqId, installRequestIdEcho } from './plugins/request-id.ts';
import { installRequestLogContext } from './plugins/request-log.ts';
import { installTracing } from './plugins/tracing.ts';
import { adminRoutes } from './routes/admin.ts';
import { agentRoutes } from './routes/agents.ts';
import { batchRoutes } from './routes/batches.ts';
import { chatRoutes } from './routes/chat.ts';
import { compactRoutes } from './routes/compact.ts';
import { contextRoutes } from './routes/context.ts';
import { eventRoutes } from './routes/events.ts';
import { healthRoutes } from './routes/health.ts';
import { messageRoutes } from './routes/messages.ts';
import { sessionControlRoutes } from './routes/session-control.ts';
import { sessionListRoutes } from './routes/session-list.ts';
import { sessionRoutes } from './routes/sessions.ts';
import { toolRoutes } from './routes/tools.ts';
import { webhookRoutes } from './routes/webhooks.ts';

// buildApp(deps): the whole HTTP gateway, with no I/O of its own until a request arrives.
// server.ts listens and handles signals; tests call inject() without a port.
//
// Layout: root (errors, OpenAPI, health) → /v1/admin (operator token) → /v1 (tenant API key)
// → /admin/queues (Bull Board, operator token or cookie). Each route file is an encapsulated
// plugin; `deps` (plugins/deps.ts) and `request.tenant` (plugins/auth.ts) are the only decorators.

export const BODY_LIMIT = 2 * 1024 * 1024;
export const BULL_BOARD_PATH = '/admin/queues';

export async function buildApp(deps: GatewayDeps): Promise<FastifyInstance> {
  if (!deps.operatorToken) throw new Error('buildApp: operatorToken is required');
  const app = Fastify({
    logger: withRedaction(deps.logger ?? false), // credentials never reach a log line
    bodyLimit: BODY_LIMIT,
    genReqId, // x-request-id or a UUID (plugins/request-id.ts)
    // Fastify accepts true, a hop count or addresses; its overloads only type-check a boolean here.
    trustProxy: (deps.trustProxy ?? false) as boolean,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // Errors raised before routing (bad percent-encoding, over-long ids) get the problem body too.
    frameworkErrors: (err, request, reply) => {
      const problem =
        err.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? { status: 404, code: 'not_found', message: 'Not found: a path parameter is too long' }
          : toProblem(err);
      request.log.info({ code: problem.code, url: redactUrl(request.url) }, problem.message);
      sendProblem(reply, problem);
    },
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  const metrics = deps.metrics ?? createGatewayMetrics({ tenantLabels: deps.metricsTenantLabels === true });
  decorateDeps(app, deps, metrics); // app.deps (plugins/deps.ts)
  app.decorateRequest('tenant', null);

  installRequestIdEcho(app);
  installTracing(app); // OpenTelemetry server spans, only when tracing is on
  installErrorHandling(app);
  await registerCors(app, deps.corsOrigins); // before any route, so preflights and errors carry it
  installRequestMetrics(app, metrics);
  installRequestLogContext(app); // tenantId/sessionId on request logs, after auth
  await registerOpenApi(app, deps.publicUrl);

  await app.register(healthRoutes);
  await app.register(metricsRoutes, {
    metrics,
    queues: () => deps.queues.all(),
    operatorToken: deps.operatorToken,
    guard: app.deps.operatorGuard,
  }); // GET /metrics (operator token)

  await app.register(
    async (admin) => {
      admin.addHook('onRequest', operatorAuth(deps.operatorToken, app.deps.operatorGuard));
      await admin.register(adminRoutes);
    },
    { prefix: '/v1/admin' },
  );

  await app.register(
    async (v1) => {
      v1.addHook('onRequest', tenantAuth(deps));
      await registerRateLimit(v1, deps); // per API key, after auth; before the routes it covers
      await v1.register(agentRoutes);
      await v1.register(toolRoutes);
      await v1.register(sessionRoutes);
      await v1.register(sessionListRoutes); // list, children, delete
      await v1.register(messageRoutes);
      // One event hub and one set of stream caps for both kinds of stream (SSE and chat).
      const streams = sessionStreams(v1);
      await v1.register(eventRoutes, { heartbeatMs: deps.sseHeartbeatMs, streams });
      await v1.register(compactRoutes);
      await v1.register(contextRoutes);
      await v1.register(sessionControlRoutes); // abort, client tool results
      await v1.register(batchRoutes);
      await v1.register(webhookRoutes); // event webhooks: subscriptions, deliveries
      await v1.register(chatRoutes, { streams }); // AI SDK UI (useChat)
    },
    { prefix: '/v1' },
  );

  await app.register(bullBoardPlugin, {
    prefix: BULL_BOARD_PATH,
    basePath: BULL_BOARD_PATH,
    queues: deps.queues.all(),
    operatorToken: deps.operatorToken,
    sessionMs: deps.operatorSessionMs,
    guard: app.deps.operatorGuard,
  });
  await app.register(operatorLoginRoutes, {
    operatorToken: deps.operatorToken,
    sameSecret,
    guard: app.deps.operatorGuard,
    ...(deps.operatorSessionMs !== undefined ? { sessionMs: deps.operatorSessionMs } : {}),
  }); // /admin/login: the browser session of the inspector and Bull Board
  await app.register(inspectorPlugin); // /admin/inspector and /v1/admin/sessions (operator token)

  return app;
}
