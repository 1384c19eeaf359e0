import { splitPrefixed } from '../config/naming';
import type { CallToolResult, ElicitRequestFormParams } from '../protocol/types';

/**
 * Gateway-authored confirmations (`confirmTools`): before forwarding a call to a listed tool, the
 * gateway itself asks the user, with a form elicitation that names the tool and shows its
 * arguments. The question and the reading of the answer are the same in both protocol eras; only the
 * delivery differs (2026-07-28: an input_required round with the gateway's own sealed state,
 * lambda/stateless; 2025-11-25: an elicitation/create on the call's stream, ./legacy-confirm).
 *
 * @example
 * // configuration: { "confirmTools": ["demo___use_aws", "billing___*"] }
 * needsConfirmation(['demo___use_aws'], 'demo', 'use_aws'); // true
 */

/** The key of the gateway's own entry in `inputRequests` / `inputResponses`. */
export const CONFIRM_KEY = 'gateway_confirm';

const MAX_ARGUMENTS_SHOWN = 4000;

/** How the gateway's own confirmation begins (the demo client tells the gateway's questions by it). */
export const CONFIRMATION_LEAD = 'The MCP gateway asks you to confirm a tool call before it is forwarded.';

/** Whether a pattern list names this tool of this target (`target___tool` or `target___*`). */
export function needsConfirmation(patterns: readonly string[], target: string, tool: string): boolean {
  return patterns.some((pattern) => {
    const split = splitPrefixed(pattern);
    return split !== undefined && split.target === target && (split.name === '*' || split.name === tool);
  });
}

/** The name the client called (for messages), else the target's own. */
export function exposedNameOf(called: unknown, tool: string): string {
  return typeof called === 'string' ? called : tool;
}

/** The form that asks the user; `exposedName` is the name the client called. */
export function confirmationForm(
  exposedName: string,
  target: string,
  tool: string,
  args: unknown,
): ElicitRequestFormParams {
  let shown = JSON.stringify(args ?? {}, null, 2);
  if (shown.length > MAX_ARGUMENTS_SHOWN)
    shown = `${shown.slice(0, MAX_ARGUMENTS_SHOWN)}\n… (${shown.length - MAX_ARGUMENTS_SHOWN} more characters)`;
  return {
    mode: 'form',
    message:
      `${CONFIRMATION_LEAD}\n\n` +
      `Tool: ${exposedName} (tool "${tool}" of target "${target}")\n` +
      `Arguments:\n${shown}`,
    requestedSchema: {
      type: 'object',
      properties: {
        confirm: {
          type: 'boolean',
          title: `Run ${exposedName}?`,
          description: 'Allow the gateway to forward this call to the target.',
        },
      },
      required: ['confirm'],
    },
  };
}

export type ConfirmationOutcome = 'confirmed' | 'declined' | 'cancelled' | 'missing';

/** Reads the user's answer (an ElicitResult); only `accept` with `confirm: true` lets the call through. */
export function confirmationOutcome(answer: unknown): ConfirmationOutcome {
  if (typeof answer !== 'object' || answer === null) return 'missing';
  const { action, content } = answer as { action?: unknown; content?: Record<string, unknown> };
  if (action === 'accept') return content?.confirm === true ? 'confirmed' : 'declined';
  if (action === 'decline') return 'declined';
  if (action === 'cancel') return 'cancelled';
  return 'missing';
}

/** The result a client gets when the user did not confirm: the tool was not called. */
export function notConfirmedResult(exposedName: string, outcome: 'declined' | 'cancelled'): CallToolResult {
  return {
    content: [
      {
        type: 'text',
        text: `The tool ${exposedName} was not called: the user ${outcome === 'declined' ? 'declined' : 'cancelled'} the confirmation.`,
      },
    ],
    isError: true,
  };
}

/** The result for a client that cannot be asked (a 2025 session without form elicitation, or a JSON-only request). */
export function cannotConfirmResult(exposedName: string, reason: string): CallToolResult {
  return {
    content: [
      {
        type: 'text',
        text: `The tool ${exposedName} requires a confirmation by the user, which this client cannot give (${reason}); it was not called.`,
      },
    ],
    isError: true,
  };
}
