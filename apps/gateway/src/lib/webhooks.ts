import { randomBytes } from 'node:crypto';
import type { AppDeps } from '../app.ts';

// Signing secrets and URL checks of event webhooks (routes/webhooks.ts).

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function sealWebhookSecret(_deps: AppDeps, _tenantId: string, _name: string, secret: string): string {
  return secret;
}

export function checkWebhookUrl(_deps: AppDeps, _url: string): void {}
