import type { ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { CONNECT_PATH } from '../../lambda/connections/names';
import { CONFIRMATION_LEAD } from '../../lambda/policy/confirm-tools';

/**
 * Who a question comes from: the gateway itself (a `confirmTools` confirmation, the connect question of
 * a per-user OAuth target) or the target whose tool was called. Two signals together:
 * - the request id: the gateway renames every request a client gets (`gw-` ids, lambda/state/records.ts)
 *   and marks with `gw-Q` those it asks itself, so a 2025-11-25 target cannot pass for the gateway. A
 *   2026-07-28 target's questions are asked by the gateway on its behalf and carry the mark too, so:
 * - what is asked: the gateway's confirmation form (it begins with CONFIRMATION_LEAD) or its consent page
 *   (`<gateway>/connect?link=…`). A 2026-07-28 target imitating either is the case left; a URL's host is
 *   shown with it anyway.
 */
export type Asker = 'gateway' | 'target';

const GATEWAY_QUESTION = /^gw-Q/;

export function whoAsks(requestId: string | number, params: ElicitRequest['params']): Asker {
  if (typeof requestId !== 'string' || !GATEWAY_QUESTION.test(requestId)) return 'target';
  if (params.mode === 'url') return isConsentPage(params.url) ? 'gateway' : 'target';
  return params.message.startsWith(CONFIRMATION_LEAD) ? 'gateway' : 'target';
}

function isConsentPage(url: string): boolean {
  try {
    const parsed = new URL(url);
    // Behind a `publicUrl` with a path the page is `<publicUrl>/connect`.
    return parsed.pathname.endsWith(CONNECT_PATH) && parsed.searchParams.has('link');
  } catch {
    return false;
  }
}
