/**
 * The region an AWS ARN names (`arn:partition:service:region:account:resource`), or undefined when
 * the value is not an ARN or names none. A secret is read in its own region, so a configuration
 * that names a secret by ARN works where no default region is set (a laptop) and across regions.
 */
export function regionOfArn(value: string): string | undefined {
  const parts = value.split(':');
  if (parts.length < 6 || parts[0] !== 'arn') return undefined;
  return parts[3] || undefined;
}
