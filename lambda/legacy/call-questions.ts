import { recordExpiredInput, recordRelayedInput } from '../observability/metrics';
import { waitForQuestionAnswer } from '../pending/questions';
import {
  cannotConfirmResult,
  confirmationForm,
  confirmationOutcome,
  notConfirmedResult,
} from '../policy/confirm-tools';
import { capabilitiesForLegacyTarget, clientAccepts, elicitationModes } from '../protocol/capabilities';
import { rpcErrorOf } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { JSONRPCMessage } from '../protocol/types';
import { newPendingRecord } from '../state/records';
import { type InputRequestEntry, toLegacyServerRequest } from '../targets/input-rounds';
import type { CallRelease } from './call-release';
import { type CallState, RELEASED } from './call-state';
import type { ServerRequests } from './server-requests';
import type { WaitingRequest, WaitingStep } from './waiting-call';

type QuestionAnswers =
  | Array<Exclude<Awaited<ReturnType<typeof waitForQuestionAnswer>>, string>>
  | 'timeout'
  | 'ended'
  | typeof RELEASED;

/** An input round's answers under the target's keys, or the call's end. */
export type CollectedInput = { responses: Record<string, unknown> } | JSONRPCResponse | typeof RELEASED;

/**
 * The questions the gateway asks the client itself, as questions (pending/questions.ts): a confirmTools
 * confirmation before the target is called, and a 2026-07-28 target's input_required rounds. Each is
 * recorded, sent on the call's stream, and its answer polled for (any instance stores it); the call
 * may be released while it waits (legacy/call-release.ts).
 */
export class CallQuestions {
  constructor(
    private readonly call: CallState,
    private readonly release: CallRelease,
    private readonly serverRequests: Pick<ServerRequests, 'checkPendingCap'>,
  ) {}

  /**
   * confirmTools: the gateway asks the user itself (form elicitation naming the tool and showing
   * its arguments) before anything reaches the target. Undefined when confirmed; otherwise the
   * final message (not confirmed, cannot be asked, timed out). The target is never called then.
   */
  async confirm(
    confirm: { exposedName: string; tool: string },
    asked?: WaitingRequest,
  ): Promise<JSONRPCMessage | undefined | typeof RELEASED> {
    const { loaded, request, target, accept } = this.call.input;
    const reply = (result: ReturnType<typeof notConfirmedResult>): JSONRPCMessage => ({
      jsonrpc: '2.0',
      id: request.id,
      result,
    });
    if (!elicitationModes(loaded.session.clientCapabilities).form) {
      return reply(cannotConfirmResult(confirm.exposedName, 'the session did not declare form elicitation'));
    }
    if (!accept.sse) {
      return reply(cannotConfirmResult(confirm.exposedName, 'the request does not accept text/event-stream'));
    }
    const params = this.call.input.params;
    const form = confirmationForm(confirm.exposedName, target, confirm.tool, params.arguments);
    const answers = asked
      ? await this.awaitQuestions([asked], { kind: 'confirm', request: asked })
      : await this.askQuestions(
          [{ method: 'elicitation/create', params: { ...form } }],
          'confirmation requested',
          (sent) => ({
            kind: 'confirm',
            request: sent[0]!,
          }),
        );
    if (answers === RELEASED) return RELEASED;
    if (answers === 'timeout') {
      return rpcErrorOf(
        request.id,
        'RequestTimeout',
        'Timed out waiting for the user to confirm the tool call; the tool was not called',
      );
    }
    if (!Array.isArray(answers)) throw new Error(`confirmation ended: ${this.call.endReason}`);
    const [answer] = answers;
    const outcome = answer && 'result' in answer ? confirmationOutcome(answer.result) : 'cancelled';
    this.call.log.info('confirmation answered', { tool: confirm.tool, outcome });
    if (outcome === 'confirmed') return undefined;
    return reply(notConfirmedResult(confirm.exposedName, outcome === 'declined' ? 'declined' : 'cancelled'));
  }

  /**
   * A per-user OAuth target (targets[].userOAuth) the session's principal has not connected to: the
   * gateway asks for the connection itself, as URL-mode elicitation on the call's stream (the request
   * form of MCP 2025-11-25 URL mode: the call stays open while the user signs in, as the reference
   * samples and the SDKs' elicitation handlers expect). Accepting means the user went to the URL; the
   * call then waits for the connection to be stored (by whichever instance the callback reached),
   * tells the client `notifications/elicitation/complete`, and goes on to the target. Undefined: go on
   * (connected, not a per-user target, or a request that cannot be asked on its stream: the target
   * link answers it with -32042 or a clear error instead).
   */
  async connect(
    asked?: Extract<WaitingStep, { kind: 'connect' }>,
  ): Promise<JSONRPCMessage | undefined | typeof RELEASED> {
    const { deps, loaded, request, target, accept } = this.call.input;
    const connections = deps.targets.connections;
    if (!connections?.has(target)) return undefined;
    const principal = loaded.session.principal;
    if (!asked) {
      if (await connections.isConnected(principal, target)) return undefined;
      if (!elicitationModes(loaded.session.clientCapabilities).url || !accept.sse) return undefined;
    }
    let step = asked;
    let answers: QuestionAnswers;
    if (step) answers = await this.awaitQuestions([step.request], step);
    else {
      // The gateway's own question goes to the client: not before the session's read (read-ahead).
      await this.call.input.sessionRead?.catch(() => undefined);
      const consent = connections.consent(target);
      answers = await this.askQuestions(
        [{ method: 'elicitation/create', params: { mode: 'url', ...consent } }],
        'connection requested',
        (sent) => {
          step = { kind: 'connect', request: sent[0]!, elicitationId: consent.elicitationId };
          return step;
        },
      );
    }
    if (answers === RELEASED) return RELEASED;
    if (answers === 'timeout' || !Array.isArray(answers) || !step)
      throw new Error(`connection ended: ${this.call.endReason}`);
    const [answer] = answers;
    const action = answer && 'result' in answer ? (answer.result as { action?: unknown }).action : 'error';
    this.call.log.info('connection request answered', { target, action: String(action) });
    if (action !== 'accept') {
      return rpcErrorOf(
        request.id,
        'ConnectionNotMade',
        `Target ${target} acts as you, and you did not connect your account there (${String(action)}); nothing was sent to it`,
        { target },
      );
    }
    // The link stays usable this long from when it was asked: the sign-in cannot finish later.
    const until = Math.min(step.request.askedAt + connections.linkTtlMs, this.call.input.exchange.deadline);
    const stop = AbortSignal.any([this.call.targetAbort.signal, this.release.releaseWaits.signal]);
    this.call.phase = 'question-wait';
    const connected = await connections.waitForConnection(principal, target, until, stop).finally(() => {
      this.call.phase = 'other';
    });
    // Let go of meanwhile (even as the look found the connection): the holder that takes the call over
    // finds it stored and tells the client once; telling it here too would say it twice.
    if (this.call.releasing) return RELEASED;
    if (!connected) {
      if (this.call.endReason) throw new Error(`connection ended: ${this.call.endReason}`);
      return rpcErrorOf(
        request.id,
        'RequestTimeout',
        `Timed out waiting for your account at ${target} to be connected; call again for a new link`,
        { target },
      );
    }
    const stream = this.call.stream();
    stream?.send({
      jsonrpc: '2.0',
      method: 'notifications/elicitation/complete',
      params: { elicitationId: step.elicitationId },
    });
    // The target's own tools replace its connect tool in the list (declared only when list changes can be sent).
    if (deps.config.clientStreamHoldSeconds > 0)
      stream?.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    return undefined;
  }

  /**
   * One input_required round of a 2026-07-28 target: every input request goes to the client as a
   * question; all answers → the responses under the target's keys. A kind the session did not
   * declare, or a client that cannot take a stream → CrossEraInputUnsupported, nothing is sent; a
   * JSON-RPC error from the client ends the call with a clear error.
   */
  async collectInput(
    entries: Array<[string, InputRequestEntry]>,
    round: number,
    requestState: string | undefined,
  ): Promise<CollectedInput> {
    const { loaded, request, target } = this.call.input;
    if (entries.length === 0) return { responses: {} }; // requestState only: retry at once
    await this.call.queue; // the target's notifications so far go first
    // What the session's version allows of what the client declared (as declared to the target).
    const usable = capabilitiesForLegacyTarget(loaded.session.clientCapabilities, loaded.session.protocolVersion);
    const refused = entries.filter(
      ([, r]) => typeof r?.method !== 'string' || !clientAccepts(usable, r.method, r.params),
    );
    if (refused.length > 0 || !this.call.input.accept.sse) {
      const methods = (refused.length ? refused : entries).map(([, r]) => String(r?.method));
      this.call.log.info('refused input requests the client cannot take', { inputMethods: methods });
      return rpcErrorOf(
        request.id,
        'CrossEraInputUnsupported',
        `Target ${target} (protocol 2026-07-28) needs input from the user (${methods.join(', ')}) that this session cannot take: ` +
          'it is relayed only when declared at initialize (elicitation, its url mode, sampling, roots) and the request accepts text/event-stream',
        { target, inputRequests: methods },
      );
    }
    const answers = await this.askQuestions(
      entries.map(([, entry]) => entry),
      'relayed input requests of a 2026-07-28 target',
      (sent) => ({
        kind: 'input',
        round,
        requestState,
        keys: sent.map((asked, index) => ({ key: entries[index]![0], ...asked })),
      }),
    );
    return this.inputResponses(
      entries.map(([key, entry]) => ({ key, method: entry.method })),
      answers,
    );
  }

  /** A round taken over: its answers (awaited), as the target's responses. */
  async awaitInput(step: Extract<WaitingStep, { kind: 'input' }>): Promise<CollectedInput> {
    const answers = await this.awaitQuestions(step.keys, step);
    return this.inputResponses(step.keys, answers);
  }

  private inputResponses(keys: Array<{ key: string; method: string }>, answers: QuestionAnswers): CollectedInput {
    const { request, target } = this.call.input;
    if (answers === RELEASED) return RELEASED;
    if (answers === 'timeout' || !Array.isArray(answers)) throw new Error(`input round ended: ${this.call.endReason}`);
    const errorIndex = answers.findIndex((a) => 'error' in a);
    const failed = answers[errorIndex];
    if (failed && 'error' in failed) {
      const method = keys[errorIndex]?.method;
      const { error } = failed;
      this.call.log.info('the client answered an input request with an error', {
        inputMethod: method,
        code: error.code,
      });
      return rpcErrorOf(
        request.id,
        'InputRequestFailed',
        `The client answered ${method} of target ${target} with an error (${error.code}: ${error.message}); the call was stopped`,
        { target, inputMethod: method, clientError: { code: error.code, message: error.message } },
      );
    }
    const responses: Record<string, unknown> = {};
    keys.forEach(({ key }, index) => {
      responses[key] = (answers[index] as { result: unknown }).result;
    });
    return { responses };
  }

  /**
   * Asks the client questions on the call's stream and waits for all answers (any instance
   * stores them; this invocation polls). Stops at the first error answer. 'timeout' only for a
   * confirmation (an input round's timeout ends the call as a pending timeout).
   */
  private async askQuestions(
    requests: InputRequestEntry[],
    logMessage: string,
    stepOf: (sent: WaitingRequest[]) => WaitingStep,
  ): Promise<QuestionAnswers> {
    const { deps, loaded, request, target } = this.call.input;
    const sent: WaitingRequest[] = [];
    await this.serverRequests.checkPendingCap(requests.length);
    // Opened first: whether the records need a live holder depends on whether the stream is resumable.
    if (!this.call.stream()) return 'ended';
    for (const entry of requests) {
      const record = this.call.withHolder(
        newPendingRecord(deps.clock.now(), deps.config.pendingRequestTimeoutSeconds, {
          kind: 'question',
          method: entry.method,
          target,
          clientRequestId: request.id,
          session: loaded.session,
        }),
        true,
      );
      await deps.store.putPending(loaded.session, record);
      this.call.questions.push(record.gatewayId);
      this.call.holder.lease.start();
      sent.push({ gatewayId: record.gatewayId, method: entry.method, askedAt: this.call.holder.clock.now() });
    }
    const stream = this.call.stream();
    if (!stream) return 'ended';
    requests.forEach((entry, index) => {
      stream.send(toLegacyServerRequest(sent[index]!.gatewayId, entry, loaded.session.protocolVersion));
      recordRelayedInput(entry.method);
    });
    this.call.log.info(logMessage, { gatewayRequestIds: sent.map((s) => s.gatewayId) });
    return this.awaitQuestions(sent, stepOf(sent));
  }

  /**
   * Waits for the answers to questions (asked by this invocation, or by one before it: their
   * pending timeout runs from when they were asked). The call may be released meanwhile (RELEASED).
   */
  private async awaitQuestions(sent: WaitingRequest[], step: WaitingStep): Promise<QuestionAnswers> {
    const { call } = this;
    const { deps, loaded } = call.input;
    await this.release.holdWaiting(step);
    const pendingEnd = Math.min(...sent.map((s) => s.askedAt)) + deps.config.pendingRequestTimeoutSeconds * 1000;
    // The deadline ends the wait only when the call cannot be released before it.
    const until = Math.min(
      this.release.waiting?.holding ? Number.POSITIVE_INFINITY : call.input.exchange.deadline,
      pendingEnd,
    );
    const failed = new AbortController(); // one error answer ends the round: stop waiting for the rest
    const stop = AbortSignal.any([call.targetAbort.signal, failed.signal, this.release.releaseWaits.signal]);
    call.phase = 'question-wait';
    const answers = await Promise.all(
      sent.map(async ({ gatewayId }) => {
        const answer = await waitForQuestionAnswer(deps.store, deps.logger, loaded.session.id, gatewayId, until, stop, {
          clock: deps.clock,
        });
        if (typeof answer === 'object' && 'error' in answer) failed.abort();
        return answer;
      }),
    ).finally(() => {
      call.phase = 'other';
    });
    if (call.releasing && !failed.signal.aborted && answers.some((a) => typeof a !== 'object')) return RELEASED;
    const errorAnswer = answers.find((a) => typeof a === 'object' && 'error' in a);
    if (errorAnswer && typeof errorAnswer === 'object') {
      return answers.map((a) => (typeof a === 'object' ? a : errorAnswer));
    }
    if (answers.some((a) => a === 'timeout') && !call.endReason) {
      if (call.holder.clock.now() < pendingEnd) call.stop('deadline');
      else if (!call.input.confirm || call.targetLink) {
        for (const { method } of sent) recordExpiredInput(method);
        call.stop('pending-timeout');
      } else return 'timeout';
    }
    if (call.endReason) return 'ended';
    return answers as Array<Exclude<(typeof answers)[number], string>>;
  }
}
