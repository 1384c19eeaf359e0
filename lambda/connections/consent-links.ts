import { randomBytes, randomUUID } from 'node:crypto';
import type { SealedBox } from '../crypto/sealed-box';
import type { Clock } from '../scheduling/clock';

/**
 * The consent link and the states the browser carries through the flow, sealed (AES-256-GCM, the
 * gateway's key) so that nothing in the browser can be forged or read: the principal, target and
 * elicitation it is for, its expiry and a one-time value. The link itself is not pre-authenticated:
 * whoever opens it must still show they are its principal (./consent-pages.ts), and the one-time value
 * is spent when the browser leaves for the authorization server and again at the callback, so a link
 * or a callback URL works once.
 */

export interface ConsentLink {
  principal: string;
  target: string;
  elicitationId: string;
  /** The 2025 session the elicitation was made in (its completion notification goes there). */
  sessionId?: string;
  /** Epoch ms. */
  expiresAt: number;
  /** The one-time value. */
  nonce: string;
}

/**
 * The OAuth `state` the authorization server hands back: the link, the browser it was started in, the
 * authorization server it went to, and what the code exchange needs.
 */
export interface FlowState extends ConsentLink {
  codeVerifier: string;
  /** This target's own callback (a distinct redirect URI per target: an answer for another cannot land here). */
  redirectUri: string;
  /** The issuer the browser was sent to: the answer must come from it (RFC 9207 `iss`) and the code goes only to its token endpoint. */
  issuer: string;
  /** The issuer advertised `authorization_response_iss_parameter_supported`: an answer without `iss` is refused. */
  issRequired: boolean;
  /** The digest of the browser binding (./browser-binding.ts): the callback must come from the same browser. */
  browser: string;
}

/** The identity provider's login that proves the principal (inbound JWT auth): the link, its own PKCE, the browser. */
export interface IdentityState extends ConsentLink {
  codeVerifier: string;
  oidcNonce: string;
  browser: string;
}

type Sealed<K extends string, T> = T & { kind: K };

/** Why a sealed link or state did not open (ConsentLinks.open). */
export type LinkRefusal = 'invalid' | 'unknown-key' | 'expired';

export class ConsentLinks {
  constructor(
    private readonly box: SealedBox,
    readonly ttlMs: number,
    /** The gateway's clock: a link expires by it. */
    private readonly clock: Clock,
  ) {}

  create(principal: string, target: string, sessionId?: string): ConsentLink {
    return {
      principal,
      target,
      elicitationId: randomUUID(),
      ...(sessionId ? { sessionId } : {}),
      expiresAt: this.clock.now() + this.ttlMs,
      nonce: randomBytes(16).toString('base64url'),
    };
  }

  seal(link: ConsentLink): string {
    return this.box.seal({ ...link, kind: 'link' } satisfies Sealed<'link', ConsentLink>);
  }

  sealFlow(state: FlowState): string {
    return this.box.seal({ ...state, kind: 'flow' } satisfies Sealed<'flow', FlowState>);
  }

  sealIdentity(state: IdentityState): string {
    return this.box.seal({ ...state, kind: 'identity' } satisfies Sealed<'identity', IdentityState>);
  }

  /**
   * The link, or why not: `expired`; `unknown-key` (sealed with a key this gateway does not hold: one
   * rotated out, a restarted local gateway's, another gateway's); `invalid` (altered, cut short, not a link).
   */
  open(text: unknown): ConsentLink | LinkRefusal {
    return this.opened(text, 'link', []);
  }

  openFlow(text: unknown): FlowState | LinkRefusal {
    const state = this.opened<FlowState>(text, 'flow', ['codeVerifier', 'redirectUri', 'issuer', 'browser']);
    return typeof state === 'string' || typeof state.issRequired === 'boolean' ? state : 'invalid';
  }

  openIdentity(text: unknown): IdentityState | LinkRefusal {
    return this.opened(text, 'identity', ['codeVerifier', 'oidcNonce', 'browser']);
  }

  private opened<T extends ConsentLink>(text: unknown, kind: string, fields: string[]): T | LinkRefusal {
    const value = this.box.open(text) as Record<string, unknown> | undefined;
    if (!value) return this.box.sealedByUnknownKey(text) ? 'unknown-key' : 'invalid';
    if (value.kind !== kind) return 'invalid';
    const strings = ['principal', 'target', 'elicitationId', 'nonce', ...fields];
    if (!strings.every((field) => typeof value[field] === 'string') || typeof value.expiresAt !== 'number') {
      return 'invalid';
    }
    if (this.clock.now() >= value.expiresAt) return 'expired';
    const { kind: _kind, ...rest } = value;
    return rest as unknown as T;
  }
}
