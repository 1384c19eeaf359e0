import type {
  ConnectionTable,
  ConnectionVersion,
  ReadConnection,
  RefreshLease,
  StoredConnection,
} from '../../lambda/state/connection-table';

/** The connection table in memory, for focused tests (the DynamoDB one is tested end to end). */
export class MemoryConnectionTable implements ConnectionTable {
  readonly items = new Map<string, ReadConnection>();
  readonly used = new Set<string>();
  readonly registrations = new Map<string, string>();
  reads = 0;

  async read(principal: string, target: string) {
    this.reads++;
    const item = this.items.get(`${principal} ${target}`);
    // A copy, as a GetItem returns one: what the caller holds does not change under it.
    return item && { ...item, ...(item.lease ? { lease: { ...item.lease } } : {}) };
  }
  async write(principal: string, target: string, stored: StoredConnection, _expiresAt: number, leaseHolder?: string) {
    const key = `${principal} ${target}`;
    if (leaseHolder !== undefined && this.items.get(key)?.lease?.holder !== leaseHolder) return false;
    // Replaced whole, as a PutItem replaces it: the lease goes with the write.
    const { ciphertext, wrappedKey, keyId, updatedAt } = stored;
    this.items.set(key, { ciphertext, wrappedKey, keyId, updatedAt });
    return true;
  }
  async remove(principal: string, target: string, version?: ConnectionVersion) {
    const key = `${principal} ${target}`;
    if (version && !sameVersion(this.items.get(key), version)) return false;
    return this.items.delete(key);
  }
  async takeLease(principal: string, target: string, version: ConnectionVersion, lease: RefreshLease, now: number) {
    const item = this.items.get(`${principal} ${target}`);
    if (!item || !sameVersion(item, version) || (item.lease && item.lease.until > now)) return false;
    item.lease = { ...lease };
    return true;
  }
  async releaseLease(principal: string, target: string, holder: string) {
    const item = this.items.get(`${principal} ${target}`);
    if (item?.lease?.holder === holder) delete item.lease;
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

function sameVersion(item: StoredConnection | undefined, version: ConnectionVersion): boolean {
  return item !== undefined && item.updatedAt === version.updatedAt && item.wrappedKey === version.wrappedKey;
}
