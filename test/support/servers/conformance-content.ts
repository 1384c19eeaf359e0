import type { IncomingHttpHeaders } from 'node:http';

/**
 * What both reference servers of the official conformance suite (`conformance-server.ts`, 2025-11-25 on
 * the v1 SDK; `conformance-modern-server.ts`, 2026-07-28 on the v2 SDK) answer alike, written from the
 * scenarios' requirement texts: the fixed tool results, resources and prompts the scenarios name, the
 * JSON Schema 2020-12 tool's schema, and the loopback Host/Origin rule. Plain JSON, so either SDK's
 * types accept it.
 */

// A 1×1 PNG and a 1-sample 8 kHz mono WAV, built here rather than pasted.
export const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

export function wav(): string {
  const header = Buffer.alloc(46);
  header.write('RIFF', 0);
  header.writeUInt32LE(38, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(16000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(2, 40);
  return header.toString('base64');
}

export const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

/** The tools whose result is fixed, by name: description and result. */
export const FIXED_TOOLS = {
  test_simple_text: {
    description: 'Returns simple text.',
    result: () => text('This is a simple text response for testing.'),
  },
  test_image_content: {
    description: 'Returns an image.',
    result: () => ({ content: [{ type: 'image' as const, data: PNG, mimeType: 'image/png' }] }),
  },
  test_audio_content: {
    description: 'Returns audio.',
    result: () => ({ content: [{ type: 'audio' as const, data: wav(), mimeType: 'audio/wav' }] }),
  },
  test_embedded_resource: {
    description: 'Returns an embedded resource.',
    result: () => ({
      content: [
        {
          type: 'resource' as const,
          resource: {
            uri: 'test://embedded-resource',
            mimeType: 'text/plain',
            text: 'This is an embedded resource content.',
          },
        },
      ],
    }),
  },
  test_multiple_content_types: {
    description: 'Returns text, an image and a resource.',
    result: () => ({
      content: [
        { type: 'text' as const, text: 'Multiple content types test:' },
        { type: 'image' as const, data: PNG, mimeType: 'image/png' },
        {
          type: 'resource' as const,
          resource: {
            uri: 'test://mixed-content-resource',
            mimeType: 'application/json',
            text: JSON.stringify({ test: 'data', value: 123 }),
          },
        },
      ],
    }),
  },
  test_error_handling: {
    description: 'Always fails (isError).',
    result: () => ({
      isError: true,
      content: [{ type: 'text' as const, text: 'This tool intentionally returns an error for testing' }],
    }),
  },
};

/**
 * The JSON Schema 2020-12 tool's input schema as the scenario gives it: SEP-1613's `$schema`, `$defs`
 * and `additionalProperties`, and SEP-2106's `$anchor`, composition and conditional keywords.
 */
export const JSON_SCHEMA_2020_12_TOOL = {
  name: 'json_schema_2020_12_tool',
  description: 'Tool with JSON Schema 2020-12 features',
  inputSchema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object' as const,
    $defs: {
      address: {
        $anchor: 'addressDef',
        type: 'object',
        properties: { street: { type: 'string' }, city: { type: 'string' } },
      },
    },
    properties: {
      name: { type: 'string' },
      address: { $ref: '#/$defs/address' },
      contactMethod: { type: 'string', enum: ['phone', 'email'] },
      phone: { type: 'string' },
      email: { type: 'string' },
    },
    allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
    if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
    // biome-ignore lint/suspicious/noThenProperty: a JSON Schema keyword, never awaited
    then: { required: ['phone'] },
    else: { required: ['email'] },
    additionalProperties: false,
  },
};

export const STATIC_RESOURCES = [
  { uri: 'test://static-text', name: 'static-text', description: 'A static text resource', mimeType: 'text/plain' },
  { uri: 'test://static-binary', name: 'static-binary', description: 'A static PNG', mimeType: 'image/png' },
];

export const RESOURCE_TEMPLATE = {
  uriTemplate: 'test://template/{id}/data',
  name: 'template',
  description: 'Data by id',
  mimeType: 'application/json',
};

/** The contents of a resource (static or from the template), or undefined for an unknown URI. */
export function readResource(uri: string) {
  if (uri === 'test://static-text')
    return { contents: [{ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }] };
  if (uri === 'test://static-binary') return { contents: [{ uri, mimeType: 'image/png', blob: PNG }] };
  const id = /^test:\/\/template\/([^/]+)\/data$/.exec(uri)?.[1];
  if (id === undefined) return undefined;
  const data = { id, templateTest: true, data: `Data for ID: ${id}` };
  return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(data) }] };
}

/** The prompts the scenarios name, with their arguments (all required). */
export const PROMPTS: Record<string, { description: string; arguments: Array<{ name: string; description: string }> }> =
  {
    test_simple_prompt: { description: 'A prompt without arguments', arguments: [] },
    test_prompt_with_arguments: {
      description: 'A prompt with two arguments',
      arguments: [
        { name: 'arg1', description: 'First test argument' },
        { name: 'arg2', description: 'Second test argument' },
      ],
    },
    test_prompt_with_embedded_resource: {
      description: 'A prompt embedding a resource',
      arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed' }],
    },
    test_prompt_with_image: { description: 'A prompt with an image', arguments: [] },
  };

/** The messages of a prompt of `PROMPTS`, or undefined for another name. */
export function promptMessages(name: string, args: Record<string, string | undefined>) {
  switch (name) {
    case 'test_simple_prompt':
      return [
        { role: 'user' as const, content: { type: 'text' as const, text: 'This is a simple prompt for testing.' } },
      ];
    case 'test_prompt_with_arguments':
      return [
        {
          role: 'user' as const,
          content: { type: 'text' as const, text: `Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'` },
        },
      ];
    case 'test_prompt_with_embedded_resource':
      return [
        {
          role: 'user' as const,
          content: {
            type: 'resource' as const,
            resource: {
              uri: args.resourceUri ?? 'test://embedded',
              mimeType: 'text/plain',
              text: 'Embedded resource content for testing.',
            },
          },
        },
        {
          role: 'user' as const,
          content: { type: 'text' as const, text: 'Please process the embedded resource above.' },
        },
      ];
    case 'test_prompt_with_image':
      return [
        { role: 'user' as const, content: { type: 'image' as const, data: PNG, mimeType: 'image/png' } },
        { role: 'user' as const, content: { type: 'text' as const, text: 'Please analyze the image above.' } },
      ];
    default:
      return undefined;
  }
}

/** What `completion/complete` offers for a partial value. */
export function completions(value: string): string[] {
  return ['paris', 'park', 'party', 'test', 'testing'].filter((w) => w.startsWith(value));
}

const LOOPBACK_HOST = /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/;

/** False when the Host or Origin is not the loopback: a loopback server refuses it (DNS rebinding). */
export function loopbackOnly(headers: Pick<IncomingHttpHeaders, 'host' | 'origin'>): boolean {
  if (!LOOPBACK_HOST.test(headers.host ?? '')) return false;
  const origin = headers.origin;
  if (origin === undefined) return true;
  try {
    return LOOPBACK_HOST.test(new URL(origin).host);
  } catch {
    return false;
  }
}

/**
 * Runs `steps` one after another with the pause the scenarios ask for between them:
 * tools-call-with-logging wants its second and third line "after ~50ms delay" each, and
 * tools-call-with-progress "~50ms" between reports, to show a client takes messages spread over a
 * call. A duration the scenario requires, not a stand-in for an event; the one such pause of both servers.
 */
export async function spreadOver(steps: Array<() => Promise<void>>, pauseMs = 50): Promise<void> {
  for (const [i, step] of steps.entries()) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    await step();
  }
}

/** tools-call-with-progress: progress 0, 50 and 100 of 100, spread over the call. */
export const PROGRESS_STEPS = [0, 50, 100] as const;
