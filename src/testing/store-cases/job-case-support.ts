// What the job cases share: a lease no case outlives, times either side of now, and a wait until
// a short lease has surely run out by the store's own clock.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Job } from '../../contracts/memory-store-jobs.js';

export const LONG_LEASE = 60_000;

export const inAnHour = (): string => new Date(Date.now() + 3_600_000).toISOString();
export const anHourAgo = (): string => new Date(Date.now() - 3_600_000).toISOString();

/** Waits until the store's own clock is surely past a job's lease (lockedUntil), plus a margin. */
export async function outlive(job: Job): Promise<void> {
  await sleep(Math.max(0, Date.parse(job.lockedUntil!) - Date.now()) + 60);
}
