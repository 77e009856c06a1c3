// @loopline/mock-llm — a scripted OpenAI-compatible model server for tests and demos.
// Scenario (zod) → rules → plan → chat/responses wire formats. See scenario.ts for the format.

export type { Conversation, ConvMessage, Endpoint, ToolDef } from './conversation.ts';
export type { ReplyKind } from './plan.ts';
export {
  bundledScenarioPath,
  EchoReply,
  FaultReply,
  loadScenario,
  parseScenario,
  Reply,
  type ReplyInput,
  Rule,
  Scenario,
  type ScenarioInput,
  SummaryReply,
  TextReply,
  ToolCallSpec,
  ToolCallsReply,
  When,
} from './scenario.ts';
export {
  type HeldCall,
  type MockLlm,
  type MockLlmOptions,
  type RecordedCall,
  startMockLlm,
} from './server.ts';
export { summarise } from './summary.ts';
export { countText, serialisePrompt } from './tokens.ts';
