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
