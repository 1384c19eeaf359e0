/**
 * Who is calling, as far as policy needs to know: the kind of credential and what it says. The
 * principal string everything else is bound to (sessions, pending requests, sealed state) is derived
 * from it, so the two never disagree.
 *
 * - `user`: a verified JWT (`auth.type: jwt`): its `sub`, issuer and claims.
 * - `iam`: the function URL's AWS_IAM caller: its ARN (no claims).
 * - `anonymous`: no credential (`auth.type: none` without an IAM caller).
 */
export type CallerIdentity =
  | { kind: 'user'; sub: string; issuer: string; claims: Readonly<Record<string, unknown>> }
  | { kind: 'iam'; arn: string }
  | { kind: 'anonymous' };

export const ANONYMOUS = 'anonymous';
export const ANONYMOUS_IDENTITY: CallerIdentity = { kind: 'anonymous' };

/** The principal string bound to what the caller creates: `<iss>#<sub>`, the IAM ARN, or `anonymous`. */
export function principalOf(identity: CallerIdentity): string {
  switch (identity.kind) {
    case 'user':
      return `${identity.issuer}#${identity.sub}`;
    case 'iam':
      return identity.arn;
    case 'anonymous':
      return ANONYMOUS;
  }
}

/** The platform's caller (a SigV4-signed function URL request), or anonymous. */
export function platformIdentity(arn: string | undefined): CallerIdentity {
  return arn ? { kind: 'iam', arn } : ANONYMOUS_IDENTITY;
}
