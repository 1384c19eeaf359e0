/**
 * Text a server sent, made safe to print: control characters (ESC above all, which would let a target's
 * message move the cursor, retitle the window or print a link of its own) are shown as U+FFFD; line
 * breaks and tabs stay.
 */
export function printable(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is replaced.
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '\uFFFD');
}
