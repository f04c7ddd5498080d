/**
 * A ClusterClass-based cluster's upgrade plan, with Cluster API's semantics (v1.12+ chained upgrades): the versions
 * the control plane steps through, one minor at a time, and the fewest the workers must take. Pure, so the cluster
 * workflow plans with it; a test compares it with Cluster API's own functions (topology-render's plan request).
 */

export interface UpgradePlan {
  /** Each minor after the control plane's own up to the target: the newest patch the class lists of it. */
  controlPlane: string[];
  /** A step every three minors (Kubernetes' kubelet skew), then the target; empty without workers to upgrade. */
  workers: string[];
}

type Version = [number, number, number];

/** vX.Y.Z, as capt's kinds accept them; undefined otherwise. */
export function parseVersion(v: string): Version | undefined {
  const m = /^v(\d+)\.(\d+)\.(\d+)$/.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

const minorOf = (v: string) => parseVersion(v)![1];

/** Orders vX.Y.Z versions, oldest first. */
export function compareVersions(a: string, b: string): number {
  const [x, y] = [parseVersion(a)!, parseVersion(b)!];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** The oldest version among the workers', or undefined when there are none. */
export function oldestVersion(versions: readonly string[]): string | undefined {
  return versions.length ? [...versions].sort(compareVersions)[0] : undefined;
}

/**
 * The plan from where the cluster runs now to `target`, or a refusal. `classVersions` is the ClusterClass's
 * spec.kubernetesVersions (oldest first, no minor skipped: Cluster API's ClusterClass webhook checked it); without
 * it only the next minor can be reached, as Cluster API's default plan allows.
 */
export function upgradePlan(
  classVersions: readonly string[] | undefined,
  target: string,
  controlPlaneVersion: string,
  oldestWorkerVersion: string | undefined,
): UpgradePlan | { refused: string } {
  const controlPlane = controlPlaneSteps(classVersions, target, controlPlaneVersion);
  if ('refused' in controlPlane) return controlPlane;
  if (oldestWorkerVersion === undefined || compareVersions(oldestWorkerVersion, target) === 0)
    return { controlPlane, workers: [] };
  // The version the control plane runs at each minor it passes, the one it starts at included.
  const atMinor = new Map([controlPlaneVersion, ...controlPlane].map((v) => [minorOf(v), v]));
  const workers: string[] = [];
  const from = minorOf(oldestWorkerVersion);
  for (let minor = from + 3; minor < minorOf(target); minor += 3) {
    const step = atMinor.get(minor);
    if (!step)
      return { refused: `no version of minor ${minor} for the workers to step through on the way to ${target}` };
    workers.push(step);
  }
  workers.push(target);
  return { controlPlane, workers };
}

function controlPlaneSteps(
  classVersions: readonly string[] | undefined,
  target: string,
  current: string,
): string[] | { refused: string } {
  if (compareVersions(current, target) === 0) return [];
  if (!classVersions?.length) {
    if (minorOf(target) > minorOf(current) + 1)
      return { refused: `cannot compute an upgrade plan from ${current} to ${target}` };
    return [target];
  }
  // A patch of the current minor is a step only when the target is of that minor too.
  const sameMinor = minorOf(target) === minorOf(current);
  const candidates = classVersions.filter(
    (v) =>
      parseVersion(v) &&
      compareVersions(v, current) > 0 &&
      compareVersions(v, target) <= 0 &&
      (sameMinor || minorOf(v) !== minorOf(current)),
  );
  // The newest listed patch of each minor; the target ends the plan.
  const steps: string[] = [];
  for (const v of candidates) {
    const last = steps.at(-1);
    if (last !== undefined && minorOf(last) === minorOf(v)) steps[steps.length - 1] = v;
    else steps.push(v);
  }
  if (steps.at(-1) !== target) return { refused: `${target} is not among the ClusterClass's spec.kubernetesVersions` };
  for (let i = 0, minor = minorOf(current); i < steps.length; minor = minorOf(steps[i]!), i++)
    if (minorOf(steps[i]!) > minor + 1)
      return { refused: `the ClusterClass's spec.kubernetesVersions list no version of minor ${minor + 1}` };
  return steps;
}
