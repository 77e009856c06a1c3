import { OpenTelemetry } from '@ai-sdk/otel';
import { registerTelemetry } from 'ai';

// The AI SDK's OpenTelemetry spans for every model call (the request, its steps, the provider
// call with token usage as gen_ai.usage.* attributes), children of the active span (the worker's
// job span). Registered once per process, only when tracing is on (@loopline/telemetry
// startTracing); streamStep turns off the recording of prompts and answers.

let registered = false;

export function enableModelTracing(): void {
  if (registered) return;
  registered = true;
  // Agent spans named by purpose (`invoke_agent step`, `… title`, `… summary`), not by model id.
  registerTelemetry(new OpenTelemetry({ agentSpanName: 'functionId' }));
}
