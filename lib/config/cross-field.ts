import {
  type CrossFieldIssue,
  type CrossFieldSubject,
  type CrossFieldTarget,
  crossFieldIssues,
  GatewayConfigSchema,
} from '../../lambda/config/schema';

/**
 * The schema's rules across fields (duplicate target names, a client secret without its client id, …)
 * applied to a file that has other problems too. zod runs them only once every field is valid, so a
 * file would show them only after its other mistakes were fixed; here they see what can be read of
 * the file, and a rule whose fields are themselves invalid waits (their own problem is reported).
 */
export function crossFieldIssuesOf(raw: unknown): CrossFieldIssue[] {
  return crossFieldIssues(crossFieldSubjectOf(raw));
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const shape = GatewayConfigSchema.shape;

/** A top-level field as the schema reads it (its default when absent), or undefined when it is invalid. */
function field<T>(
  schema: { safeParse(value: unknown): { success: true; data: T } | { success: false } },
  value: unknown,
) {
  const parsed = schema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

function targetOf(raw: unknown): CrossFieldTarget | undefined {
  if (!isObject(raw)) return undefined;
  const userOAuth = raw.userOAuth;
  return {
    name: typeof raw.name === 'string' ? raw.name : undefined,
    headers: isObject(raw.headers) ? raw.headers : undefined,
    oauth: raw.oauth,
    userOAuth: isObject(userOAuth)
      ? {
          clientId: userOAuth.clientId,
          clientSecret: userOAuth.clientSecret,
          authorizationServer: userOAuth.authorizationServer,
        }
      : undefined,
  };
}

export function crossFieldSubjectOf(raw: unknown): CrossFieldSubject {
  if (!isObject(raw)) return { targets: [] };
  const { auth, connections } = raw;
  return {
    targets: Array.isArray(raw.targets) ? raw.targets.map(targetOf) : [],
    auth:
      auth === undefined
        ? { type: 'none' }
        : isObject(auth) && typeof auth.type === 'string'
          ? { type: auth.type }
          : undefined,
    connections: connections === undefined ? {} : isObject(connections) ? connections : undefined,
    streamRelease: field(shape.streamRelease, raw.streamRelease),
    pendingRequestTimeoutSeconds: field(shape.pendingRequestTimeoutSeconds, raw.pendingRequestTimeoutSeconds),
    streamLogTtlSeconds: field(shape.streamLogTtlSeconds, raw.streamLogTtlSeconds),
  };
}
