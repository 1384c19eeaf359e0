import { join } from 'node:path';
import { freeLoopbackPort, startReadyProcess } from '../../../dev/oauth-demo/authorization-server';

/** What the hostile authorization server (./serve-hostile-authorization-server.ts) was sent. */
export interface HostileRecord {
  tokenRequests: Array<{ persona: string; code: boolean; verifier: boolean }>;
  redeemed: Array<{ ok: boolean; subject?: string }>;
  authorizeRequests: number;
}

export interface HostileAuthorizationServer {
  /** Its base URL; each persona's issuer is `<base>/<persona>`. */
  base: string;
  issuer(persona: 'mixup' | 'liar' | 'steer' | 'scheme' | 'bounce'): string;
  /** Its client at the honest server and the honest resource it asks for there. */
  configure(honestClientId: string, honestResource: string): Promise<void>;
  record(): Promise<HostileRecord>;
  close(): Promise<void>;
}

/** Starts it in a process of its own, attacking `honestIssuer`; `steerUrl` is where the `steer` persona points. */
export async function startHostileAuthorizationServer(
  honestIssuer: string,
  steerUrl: string,
): Promise<HostileAuthorizationServer> {
  const port = await freeLoopbackPort();
  const server = await startReadyProcess(join(__dirname, 'serve-hostile-authorization-server.ts'), {
    PORT: String(port),
    HONEST_ISSUER: honestIssuer,
    STEER_URL: steerUrl,
  });
  const base = server.ready;
  return {
    base,
    issuer: (persona) => `${base}/${persona}`,
    configure: async (honestClientId, honestResource) => {
      const res = await fetch(`${base}/test/configure`, {
        method: 'POST',
        body: JSON.stringify({ honestClientId, honestResource }),
        signal: AbortSignal.timeout(5_000),
      });
      if (!res.ok) throw new Error(`configure answered ${res.status}`);
    },
    record: async () =>
      (await (await fetch(`${base}/test/record`, { signal: AbortSignal.timeout(5_000) })).json()) as HostileRecord,
    close: server.close,
  };
}
