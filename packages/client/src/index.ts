// @loopline/client: a typed client for the Loopline API (fetch only: Node ≥ 20 and browsers).

export * from './client.ts';
export { LooplineError, type Problem } from './errors.ts';
export type { components, operations, paths } from './openapi.ts';
export { parseSse, type SseMessage } from './sse.ts';
