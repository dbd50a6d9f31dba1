import { hostname } from 'node:os';

/**
 * Who holds a job's lease, as both backends record it with the lease: this machine's name and this
 * process's id. A lease whose holder is gone from this host is provably dead (taken back at once);
 * one held on another host, or by a pid that is alive (maybe reused), waits for its heartbeat to stop.
 */
export interface LeaseHolder {
  host: string;
  pid: number;
}

let cachedHost: string | undefined;

/** This process, as a lease holder (the host name read once). */
export function thisLeaseHolder(): LeaseHolder {
  cachedHost ??= hostname();
  return { host: cachedHost, pid: process.pid };
}

/** Whether a recorded holder is a process of this host that no longer exists (killed, crashed). */
export function isDeadHolder(host: string | null, pid: number | null): boolean {
  const self = thisLeaseHolder();
  if (host !== self.host || pid === null || !Number.isInteger(pid) || pid <= 0 || pid === self.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
