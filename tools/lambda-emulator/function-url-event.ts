import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { LambdaFunctionURLEvent } from 'aws-lambda';

export interface FunctionUrlEventOptions {
  /**
   * Play a URL with auth type AWS_IAM whose caller signed as this ARN: the event gets the
   * `requestContext.authorizer.iam` block (the gateway reads only `userArn`). Default: auth type NONE.
   */
  iamUserArn?: string;
}

/**
 * The payload (format 2.0) a function URL hands the function: headers lower-cased and repeats
 * comma-joined, cookies split out, text bodies as is and anything else base64-encoded, an `authorizer`
 * block only for AWS_IAM auth (the AWS Lambda guide, "Invoking Lambda function URLs": request payload format).
 */
export function toFunctionUrlEvent(
  req: IncomingMessage,
  body: Buffer,
  options: FunctionUrlEventOptions = {},
): LambdaFunctionURLEvent {
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = (req.rawHeaders[i] ?? '').toLowerCase();
    const value = req.rawHeaders[i + 1] ?? '';
    if (name === 'cookie') {
      for (const cookie of value.split(';')) if (cookie.trim()) cookies.push(cookie.trim());
    } else {
      headers[name] = name in headers ? `${headers[name]},${value}` : value;
    }
  }
  const sourceIp = req.socket.remoteAddress ?? '127.0.0.1';
  // What the function URL front end adds; http (not https) because this one is plain HTTP on loopback.
  Object.assign(headers, {
    'x-forwarded-proto': 'http',
    'x-forwarded-for': sourceIp,
    'x-forwarded-port': String(req.socket.localPort),
    'x-amzn-trace-id': `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${randomBytes(12).toString('hex')}`,
  });
  const [rawPath = '/', rawQueryString = ''] = (req.url ?? '/').split(/\?(.*)/s);
  const query: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(rawQueryString)) {
    query[key] = key in query ? `${query[key]},${value}` : value;
  }
  const domainName = headers.host ?? 'localhost';
  const { iamUserArn } = options;
  // The real iam block has more ids; these stand in for them.
  const ids = { callerId: 'AIDALOCAL', userId: 'AIDALOCAL', accessKey: 'ASIALOCAL', cognitoIdentity: null };
  const iam = iamUserArn && { ...ids, userArn: iamUserArn, accountId: iamUserArn.split(':')[4] ?? '' };
  const text = body.length > 0 && isTextual(headers['content-type']) ? decodeUtf8(body) : undefined;
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    ...(cookies.length ? { cookies } : {}),
    headers,
    ...(rawQueryString ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'local',
      domainName,
      domainPrefix: domainName.split('.')[0] ?? domainName,
      http: {
        method: req.method ?? 'GET',
        path: rawPath,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp,
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
      ...(iam ? { authorizer: { iam } } : {}),
    },
    ...(body.length === 0 ? {} : { body: text ?? body.toString('base64') }),
    isBase64Encoded: body.length > 0 && text === undefined,
  };
}

/** Content types a function URL passes as text; everything else arrives base64-encoded. */
function isTextual(contentType = ''): boolean {
  return /^$|^text\/|[/+](json|xml)\b|javascript|x-www-form-urlencoded/i.test(contentType);
}

function decodeUtf8(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined; // not valid UTF-8: sent base64-encoded instead
  }
}
