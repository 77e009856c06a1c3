// @loopline/egress — the one door for outbound requests a tenant can influence (webhook tools,
// attachment downloads, tenant model endpoints): address policy checked at connect time, bounded
// reads, header rules; plus the secret box (AES-256-GCM at rest) and Standard Webhooks signing.

export { type AddressClass, classifyAddress, isIpLiteral } from './address.ts';
export {
  ATTACHMENT_MEDIA_TYPES,
  ATTACHMENT_URL_MAX_CHARS,
  DEFAULT_ATTACHMENT_MAX_BYTES,
  parseDataUrl,
} from './attachments.ts';
export { checkHeaders, checkUrl, FORBIDDEN_HEADERS, headerProblem } from './door.ts';
export {
  EGRESS_REFUSED,
  EGRESS_TOO_LARGE,
  type EgressReason,
  EgressRefusedError,
  findEgressRefusal,
} from './errors.ts';
export {
  createEgressGate,
  DEFAULT_FETCH_MAX_BYTES,
  type EgressGate,
  type GateOptions,
  type GateResponse,
  type Limits,
  type RequestInit,
  type Resolve,
} from './gate.ts';
export {
  DENY_PRIVATE,
  EGRESS_PURPOSES,
  type EgressPolicies,
  type EgressPolicy,
  type EgressPurpose,
  type EgressSettings,
  hostList,
  policiesFromConfig,
  policiesFromEnv,
} from './policy.ts';
export {
  agentCredentialAad,
  openSecret,
  openToolHeader,
  openToolHeaders,
  type SecretBox,
  sealSecret,
  sealToolHeader,
  secretBoxFromEnv,
  secretBoxFromKey,
  toolHeaderAad,
  toolSecretAad,
} from './secrets.ts';
export {
  generateWebhookSecret,
  signWebhook,
  verifyWebhook,
  type WebhookSignatureHeaders,
} from './signing.ts';
