import type { ConnectionTable, StoredConnection } from '../../lambda/state/connection-table';

/** The connection table in memory, for focused tests (the DynamoDB one is tested end to end). */
export class MemoryConnectionTable implements ConnectionTable {
  readonly items = new Map<string, StoredConnection>();
  readonly used = new Set<string>();
  readonly registrations = new Map<string, string>();
  reads = 0;

  async read(principal: string, target: string) {
    this.reads++;
    return this.items.get(`${principal} ${target}`);
  }
  async write(principal: string, target: string, stored: StoredConnection) {
    this.items.set(`${principal} ${target}`, stored);
  }
  async remove(principal: string, target: string) {
    return this.items.delete(`${principal} ${target}`);
  }
  async targetsOf(principal: string) {
    return [...this.items.keys()]
      .filter((k) => k.startsWith(`${principal} `))
      .map((k) => k.slice(principal.length + 1));
  }
  async useOnce(value: string) {
    if (this.used.has(value)) return false;
    this.used.add(value);
    return true;
  }
  async readRegistration(target: string, issuer: string) {
    return this.registrations.get(`${target} ${issuer}`);
  }
  async keepRegistration(target: string, issuer: string, sealed: string) {
    const key = `${target} ${issuer}`;
    if (!this.registrations.has(key)) this.registrations.set(key, sealed);
    return this.registrations.get(key)!;
  }
}
