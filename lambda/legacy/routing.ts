import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayDeps } from '../core/deps';
import { GatewayError } from '../core/errors';
import { RpcCode } from '../core/jsonrpc';
import type { ListingKind } from '../targets/catalog-cache';
import { NAME_SEPARATOR, resolveName } from '../targets/naming';
import { listFromTargets } from './aggregate';
import type { TargetSessions } from './target-sessions';

/** Finds the target of a call; lists live only when the name alone cannot tell (bare names, URIs). */
export class Router {
  constructor(
    private readonly deps: GatewayDeps,
    private readonly sessions: TargetSessions,
    private readonly sessionId: string,
    private readonly signal: AbortSignal,
  ) {}

  private get targetNames(): string[] {
    return this.deps.config.targets.map((t) => t.name);
  }

  /** Items of one kind per target, from this instance's recent listing or a live one. */
  private async listing<K extends ListingKind>(kind: K, targets = this.targetNames, refresh = false) {
    const cached = targets.map((target) => ({ target, items: this.deps.catalog.get(target, kind) }));
    if (!refresh && cached.every((entry) => entry.items !== undefined)) {
      return cached as Array<{ target: string; items: NonNullable<(typeof cached)[number]['items']> }>;
    }
    return listFromTargets(this.deps, this.sessions, kind, this.signal, this.sessionId, targets);
  }

  async named(called: unknown, kind: 'tool' | 'prompt'): Promise<{ target: string; name: string }> {
    if (typeof called !== 'string' || called.length === 0) {
      throw new GatewayError(RpcCode.InvalidParams, `Invalid params: ${kind} name must be a non-empty string`);
    }
    const listKind = kind === 'tool' ? 'tools' : 'prompts';
    const offers = (lists: Array<{ target: string; items: unknown }>, target: string, name: string) =>
      lists.some((l) => l.target === target && (l.items as Array<Tool | Prompt>).some((item) => item.name === name));
    // A prefixed name needs only its own target's listing (cached per instance, refreshed on a miss).
    const separator = called.indexOf(NAME_SEPARATOR);
    if (separator > 0) {
      const target = called.slice(0, separator);
      const name = called.slice(separator + NAME_SEPARATOR.length);
      if (this.targetNames.includes(target)) {
        const cached = await this.listing(listKind, [target]);
        if (offers(cached, target, name)) return { target, name };
        const fresh = await this.listing(listKind, [target], true);
        if (offers(fresh, target, name)) return { target, name };
        // Unreachable target: route anyway so the client learns which dependency failed.
        if (!fresh.some((l) => l.target === target)) return { target, name };
      }
    }
    const lists = await this.listing(listKind);
    const entries = lists.flatMap(({ target, items }) =>
      (items as Array<Tool | Prompt>).map((item) => ({ target, name: item.name })),
    );
    const resolution = resolveName(called, entries, this.targetNames, kind);
    if (!resolution.ok)
      throw new GatewayError(RpcCode.InvalidParams, resolution.message, { candidates: resolution.candidates });
    return { target: resolution.target, name: resolution.name };
  }

  /** The target of a resource URI: an exact listed resource first, then a matching template. */
  async resource(uri: unknown): Promise<string> {
    if (typeof uri !== 'string' || uri.length === 0)
      throw new GatewayError(RpcCode.InvalidParams, 'Invalid params: uri must be a non-empty string');
    const resources = await this.listing('resources');
    const exact = resources.find(({ items }) => (items as Resource[]).some((r) => r.uri === uri));
    if (exact) return exact.target;
    const templates = await this.listing('resourceTemplates');
    const templated = templates.find(({ items }) =>
      (items as ResourceTemplate[]).some((t) => matchesTemplate(t.uriTemplate, uri)),
    );
    if (templated) return templated.target;
    if (this.targetNames.length === 1) return this.targetNames[0];
    throw new GatewayError(-32002, `Resource not found: ${uri}`, { uri });
  }

  /** The target that owns a resource template, for completion/complete. */
  async template(uriTemplate: unknown): Promise<string> {
    const templates = await this.listing('resourceTemplates');
    const owner = templates.find(({ items }) =>
      (items as ResourceTemplate[]).some((t) => t.uriTemplate === uriTemplate),
    );
    if (owner) return owner.target;
    return this.resource(uriTemplate);
  }
}

/** RFC 6570 matching sufficient for routing: each expression matches one segment, `{+x}`/`{#x}` anything. */
export function matchesTemplate(template: string, uri: string): boolean {
  const pattern = template
    .split(/(\{[^}]*\})/)
    .map((part) => {
      if (!part.startsWith('{')) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      if (part.startsWith('{+') || part.startsWith('{#')) return '.*';
      if (part.startsWith('{?') || part.startsWith('{&')) return '(?:[?&].*)?';
      return '[^/?#]+';
    })
    .join('');
  return new RegExp(`^${pattern}$`).test(uri);
}
