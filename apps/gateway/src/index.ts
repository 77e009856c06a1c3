// @loopline/gateway — the HTTP API. buildApp(deps) builds the Fastify app; server.ts runs it.
export { BODY_LIMIT, BULL_BOARD_PATH, buildApp } from './app.ts';
export type { GatewayDeps } from './deps.ts';
export type { AppDeps } from './plugins/deps.ts';
export { main } from './server.ts';
