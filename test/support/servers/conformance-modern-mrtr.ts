import {
  type CallToolResult,
  type InputRequests,
  type InputRequiredResult,
  inputRequired,
  inputResponse,
  type McpServer,
  type RequestStateCodec,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { text } from './conformance-content';

/**
 * The multi round-trip (input_required, SEP-2322) tools and prompt of the 2026-07-28 conformance
 * reference server, as the `input-required-result-*` scenarios describe them: one input request per
 * kind (elicitation, sampling, roots), a round-tripped and an evolving requestState, several requests
 * at once, requests only for capabilities the client declared, and a prompt that asks. A retry that
 * lacks a response it needs (a missing key, or a value that is no response) is asked again, never
 * failed. requestState is minted and verified by the server's HMAC codec, so a tampered one is
 * refused before a handler runs (-32602).
 */

/** What a requestState of these tools carries: the tool that minted it and the round it ends. */
export interface RoundState {
  tool: string;
  round: number;
}

const askName = (message: string) => inputRequired.elicit({ message, requestedSchema: z.object({ name: z.string() }) });

/** The verified state of this tool's round `round`, or undefined (none, another tool's, another round). */
function stateOf(ctx: ServerContext, tool: string, round: number): RoundState | undefined {
  const state = ctx.mcpReq.requestState<RoundState>();
  return state?.tool === tool && state.round === round ? state : undefined;
}

function responded(ctx: ServerContext, key: string) {
  return inputResponse(ctx.mcpReq.inputResponses, key);
}

/** The client's declared capabilities (the request's `_meta` envelope). */
function clientCapabilities(ctx: ServerContext): Record<string, unknown> {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const declared = envelope?.['io.modelcontextprotocol/clientCapabilities'];
  return typeof declared === 'object' && declared !== null ? (declared as Record<string, unknown>) : {};
}

export function registerInputRequiredTools(server: McpServer, codec: RequestStateCodec<RoundState>): void {
  const mint = (tool: string, round: number) => codec.mint({ tool, round });
  const tool = (
    name: string,
    description: string,
    handler: (ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult>,
  ) => server.registerTool(name, { description }, handler);

  tool('test_input_required_result_elicitation', 'Asks the user for a name (one elicitation).', async (ctx) => {
    const answer = responded(ctx, 'user_name');
    if (answer.kind === 'elicit') return text(`Hello, ${String(answer.content?.name ?? 'stranger')}!`);
    return inputRequired({ inputRequests: { user_name: askName('What is your name?') } });
  });

  tool('test_input_required_result_sampling', 'Asks the client LLM a question (one sampling).', async (ctx) => {
    const answer = responded(ctx, 'capital_question');
    if (answer.kind === 'sampling') {
      const content = Array.isArray(answer.result.content) ? answer.result.content[0] : answer.result.content;
      return text(`LLM answered: ${content?.type === 'text' ? content.text : JSON.stringify(content)}`);
    }
    return inputRequired({
      inputRequests: {
        capital_question: inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
          maxTokens: 100,
        }),
      },
    });
  });

  tool('test_input_required_result_list_roots', "Lists the client's roots (one roots/list).", async (ctx) => {
    const answer = responded(ctx, 'client_roots');
    if (answer.kind === 'roots') return text(`Client roots: ${answer.roots.map((root) => root.uri).join(', ')}`);
    return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
  });

  tool('test_input_required_result_request_state', 'Asks for a confirmation with a requestState.', async (ctx) => {
    const name = 'test_input_required_result_request_state';
    const answer = responded(ctx, 'confirm');
    if (answer.kind === 'elicit' && stateOf(ctx, name, 1))
      return text(`state-ok: confirmed ${JSON.stringify(answer.content ?? {})}`);
    return inputRequired({
      inputRequests: {
        confirm: inputRequired.elicit({
          message: 'Please confirm',
          requestedSchema: z.object({ ok: z.boolean() }),
        }),
      },
      requestState: await mint(name, 1),
    });
  });

  tool(
    'test_input_required_result_multiple_inputs',
    'Asks for a name, a greeting and the roots at once.',
    async (ctx) => {
      const name = 'test_input_required_result_multiple_inputs';
      const user = responded(ctx, 'user_name');
      const greeting = responded(ctx, 'greeting');
      const roots = responded(ctx, 'client_roots');
      if (user.kind === 'elicit' && greeting.kind === 'sampling' && roots.kind === 'roots' && stateOf(ctx, name, 1))
        return text(`All three answered: ${String(user.content?.name)}, ${roots.roots.length} root(s)`);
      return inputRequired({
        inputRequests: {
          user_name: askName('What is your name?'),
          greeting: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
            maxTokens: 50,
          }),
          client_roots: inputRequired.listRoots(),
        },
        requestState: await mint(name, 1),
      });
    },
  );

  tool('test_input_required_result_multi_round', 'Asks twice, the requestState changing per round.', async (ctx) => {
    const name = 'test_input_required_result_multi_round';
    const step2 = responded(ctx, 'step2');
    if (step2.kind === 'elicit' && stateOf(ctx, name, 2))
      return text(`Both steps done: color ${String(step2.content?.color)}`);
    if (responded(ctx, 'step1').kind === 'elicit' && stateOf(ctx, name, 1)) {
      return inputRequired({
        inputRequests: {
          step2: inputRequired.elicit({
            message: 'Step 2: What is your favorite color?',
            requestedSchema: z.object({ color: z.string() }),
          }),
        },
        requestState: await mint(name, 2),
      });
    }
    return inputRequired({
      inputRequests: { step1: askName('Step 1: What is your name?') },
      requestState: await mint(name, 1),
    });
  });

  tool('test_input_required_result_tampered_state', 'Asks with an integrity-protected requestState.', async (ctx) => {
    const name = 'test_input_required_result_tampered_state';
    if (responded(ctx, 'confirm').kind === 'elicit' && stateOf(ctx, name, 1)) return text('state verified');
    return inputRequired({
      inputRequests: {
        confirm: inputRequired.elicit({ message: 'Please confirm', requestedSchema: z.object({ ok: z.boolean() }) }),
      },
      requestState: await mint(name, 1),
    });
  });

  tool('test_input_required_result_capabilities', 'Asks only in the ways the client declared.', async (ctx) => {
    const declared = clientCapabilities(ctx);
    const requests: InputRequests = {};
    if (declared.elicitation !== undefined && responded(ctx, 'user_name').kind !== 'elicit')
      requests.user_name = askName('What is your name?');
    if (declared.sampling !== undefined && responded(ctx, 'greeting').kind !== 'sampling') {
      requests.greeting = inputRequired.createMessage({
        messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
        maxTokens: 50,
      });
    }
    if (Object.keys(requests).length === 0) return text('Answered in every way the client declared');
    return inputRequired({ inputRequests: requests });
  });

  server.registerPrompt(
    'test_input_required_result_prompt',
    { description: 'A prompt that asks the user for its context first.' },
    (ctx) => {
      const answer = responded(ctx, 'user_context');
      if (answer.kind === 'elicit') {
        return {
          messages: [
            {
              role: 'user',
              content: { type: 'text', text: `Use this context: ${String(answer.content?.context ?? '')}` },
            },
          ],
        };
      }
      return inputRequired({
        inputRequests: {
          user_context: inputRequired.elicit({
            message: 'What context should the prompt use?',
            requestedSchema: z.object({ context: z.string() }),
          }),
        },
      });
    },
  );
}
