/**
 * How a response ended: fully sent, abandoned by the client, or broken while being produced. The
 * adapters report it (http/exchange.ts `onResponseEnd`) and the access log writes it. A module of its
 * own, importing nothing, so the exchange contract (and the CDK construct's declarations, which reach
 * it through http/cors.ts) depends on no logger.
 */
export type ResponseOutcome = 'complete' | 'cancelled' | 'error';
