import { generateWebhookSecret } from '@loopline/egress';
import { webhookSecretAad } from '@loopline/queue';
import type { AppDeps } from '../plugins/deps.ts';
import { checkWebhook, invalid } from './egress.ts';

// Signing secrets and URL checks of event webhooks (routes/webhooks.ts): the same door checks
// and the same secret box (LOOPLINE_SECRETS_KEY) as webhook tools (lib/egress.ts).

/** A new random webhook signing secret. */
export const newWebhookSecret = (): string => generateWebhookSecret();

/** The secret sealed for storage; without a secrets key a subscription cannot be signed: 400. */
export function sealWebhookSecret(deps: AppDeps, tenantId: string, name: string, secret: string): string {
  const box = deps.egress?.secrets;
  if (!box)
    throw invalid([
      {
        path: '/url',
        message: 'this deployment cannot sign event webhooks (LOOPLINE_SECRETS_KEY is not set)',
      },
    ]);
  return box.seal(secret, webhookSecretAad(tenantId, name));
}

/** The egress door check of webhook tools (scheme, private addresses the operator did not allow). */
export function checkWebhookUrl(deps: AppDeps, url: string): void {
  checkWebhook(deps, { url, headers: {} });
}
