import {
  configureMetrics,
  flushMetrics,
  MetricName,
  recordAnsweredInput,
  recordError,
  recordExpiredInput,
  recordRelayedInput,
  recordTargetLatency,
} from '../../../lambda/observability/metrics';

/** EMF lines written to stdout while `fn` runs. */
function emitted(fn: () => void): Array<Record<string, any>> {
  const lines: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    fn();
  } finally {
    spy.mockRestore();
  }
  return lines
    .flatMap((chunk) => chunk.split('\n'))
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

describe('gateway metrics (Powertools EMF)', () => {
  const saved = process.env.POWERTOOLS_METRICS_NAMESPACE;
  afterEach(() => {
    if (saved === undefined) delete process.env.POWERTOOLS_METRICS_NAMESPACE;
    else process.env.POWERTOOLS_METRICS_NAMESPACE = saved;
    configureMetrics({});
  });

  test('print nothing locally (no POWERTOOLS_METRICS_NAMESPACE, no flag)', () => {
    delete process.env.POWERTOOLS_METRICS_NAMESPACE;
    configureMetrics({});
    const lines = emitted(() => {
      recordRelayedInput('elicitation/create');
      recordAnsweredInput('elicitation/create');
      recordExpiredInput('sampling/createMessage');
      recordError(-32603);
      recordTargetLatency('docs', 12);
      flushMetrics();
    });
    expect(lines).toEqual([]);
  });

  test('emit one EMF line per metric with its dimension when the namespace is set (as in Lambda)', () => {
    process.env.POWERTOOLS_METRICS_NAMESPACE = 'McpGateway';
    configureMetrics({ serviceName: 'GatewayProd' });
    const lines = emitted(() => {
      recordRelayedInput('elicitation/create');
      recordAnsweredInput('elicitation/create');
      recordExpiredInput('roots/list');
      recordError(-32002);
      recordTargetLatency('docs', 182.5);
    });
    expect(lines).toHaveLength(5);
    const [relayed, answered, expired, error, latency] = lines;
    expect(relayed._aws.CloudWatchMetrics).toEqual([
      {
        Namespace: 'McpGateway',
        Dimensions: [['service', 'method']],
        Metrics: [{ Name: MetricName.RelayedInputRequests, Unit: 'Count' }],
      },
    ]);
    expect(relayed).toMatchObject({ service: 'GatewayProd', method: 'elicitation/create', RelayedInputRequests: 1 });
    expect(answered).toMatchObject({ method: 'elicitation/create', AnsweredInputRequests: 1 });
    expect(expired).toMatchObject({ method: 'roots/list', ExpiredInputRequests: 1 });
    expect(error).toMatchObject({ code: '-32002', GatewayErrors: 1 });
    expect(latency).toMatchObject({ target: 'docs', TargetLatency: 182.5 });
    expect(latency._aws.CloudWatchMetrics[0].Metrics).toEqual([{ Name: 'TargetLatency', Unit: 'Milliseconds' }]);
  });

  test('a flag turns metrics on or off regardless of the environment', () => {
    process.env.POWERTOOLS_METRICS_NAMESPACE = 'McpGateway';
    configureMetrics({ enabled: false });
    expect(emitted(() => recordError(500))).toEqual([]);
    delete process.env.POWERTOOLS_METRICS_NAMESPACE;
    configureMetrics({ enabled: true, namespace: 'Local' });
    expect(emitted(() => recordError(500))[0]._aws.CloudWatchMetrics[0].Namespace).toBe('Local');
  });

  test('nonsense latencies are dropped, never thrown', () => {
    configureMetrics({ enabled: true });
    expect(
      emitted(() => {
        recordTargetLatency('docs', Number.NaN);
        recordTargetLatency('docs', -1);
      }),
    ).toEqual([]);
  });
});
