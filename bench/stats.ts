/** Percentiles and formatting for benchmark samples (milliseconds). */
export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

export interface Distribution {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export function distribution(samples: number[]): Distribution {
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    n: samples.length,
    p50: round(percentile(samples, 50)),
    p95: round(percentile(samples, 95)),
    p99: round(percentile(samples, 99)),
    max: round(Math.max(...samples)),
  };
}

export function ratio(a: number, b: number): number {
  return Math.round((a / b) * 100) / 100;
}
