import { ApiException, CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import { kubeApiConfiguration, translate } from '../kube/kube-client';

/** Where bridges meet: kube-system exists in every Kubernetes API, so `capt init` needs to make nothing for it. */
export const bridgeLeaseRef = { namespace: 'kube-system', name: 'capt-bridge' };

export interface LeaseOptions {
  /** This bridge's name in the Lease's holderIdentity: host, pid and a random part, unique per process. */
  identity: string;
  /** How long a holder that stopped renewing keeps the lease (client-go's default is 15 s). */
  durationSeconds: number;
}

// Lease times are MicroTime: the apiserver insists on six fractional digits, so a time read back is rewritten too.
const microTime = (at: Date = new Date()) =>
  new Date(at).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z') as unknown as Date;
const conflict = (err: unknown) => err instanceof ApiException && (err.code === 409 || err.code === 404);

/**
 * One bridge at a time, as Kubernetes controllers elect a leader: the holder renews a coordination.k8s.io Lease,
 * and another takes it only when it is released or has not changed for its duration by the taker's own clock
 * (no two hosts' clocks are compared). Writes carry the read resourceVersion, so two takers cannot both win.
 */
export class BridgeLease {
  private readonly api: CoordinationV1Api;
  /** The lease's record as last read, and when (by this process's clock) it last changed. */
  private observed?: { record: string; at: number };

  constructor(
    kubeconfig: string,
    private readonly o: LeaseOptions,
  ) {
    this.api = new CoordinationV1Api(kubeApiConfiguration(kubeconfig).configuration);
  }

  /** Takes the lease when it is free or expired, renews it when held; true while this bridge holds it. */
  async hold(): Promise<boolean> {
    const lease = await this.read();
    if (!lease) return this.create();
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const record = `${holder} ${String(spec.renewTime)} ${spec.leaseTransitions ?? 0}`;
    if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
    const expired = Date.now() > this.observed.at + (spec.leaseDurationSeconds ?? this.o.durationSeconds) * 1000;
    const mine = holder === this.o.identity;
    if (holder && !mine && !expired) return false;
    const now = microTime();
    lease.spec = {
      ...spec,
      ...(spec.acquireTime ? { acquireTime: microTime(spec.acquireTime) } : {}),
      holderIdentity: this.o.identity,
      leaseDurationSeconds: this.o.durationSeconds,
      renewTime: now,
      ...(mine ? {} : { acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 }),
    };
    return this.replace(lease);
  }

  /** Lets the lease go at once (on a clean stop), so another bridge need not wait out its duration. */
  async release(): Promise<void> {
    const lease = await this.read();
    if (lease?.spec?.holderIdentity !== this.o.identity) return;
    const { acquireTime } = lease.spec;
    lease.spec = {
      ...lease.spec,
      ...(acquireTime ? { acquireTime: microTime(acquireTime) } : {}),
      holderIdentity: '',
      leaseDurationSeconds: 1,
      renewTime: microTime(),
    };
    await this.replace(lease);
  }

  private async read(): Promise<V1Lease | undefined> {
    try {
      return await this.api.readNamespacedLease(bridgeLeaseRef);
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return undefined;
      translate(err, `reading Lease ${bridgeLeaseRef.namespace}/${bridgeLeaseRef.name}`);
    }
  }

  private async create(): Promise<boolean> {
    const now = microTime();
    try {
      await this.api.createNamespacedLease({
        namespace: bridgeLeaseRef.namespace,
        body: {
          metadata: { name: bridgeLeaseRef.name },
          spec: {
            holderIdentity: this.o.identity,
            leaseDurationSeconds: this.o.durationSeconds,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: 0,
          },
        },
      });
      return true;
    } catch (err) {
      if (conflict(err)) return false;
      translate(err, `creating Lease ${bridgeLeaseRef.namespace}/${bridgeLeaseRef.name}`);
    }
  }

  /** A write of what was read: a conflict means another bridge wrote first, and this one does not hold it. */
  private async replace(lease: V1Lease): Promise<boolean> {
    try {
      await this.api.replaceNamespacedLease({ ...bridgeLeaseRef, body: lease });
      return true;
    } catch (err) {
      if (conflict(err)) return false;
      translate(err, `writing Lease ${bridgeLeaseRef.namespace}/${bridgeLeaseRef.name}`);
    }
  }
}
