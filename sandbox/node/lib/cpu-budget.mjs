// A run's time budget counted in CPU time of the process that does the work, so that a type
// checker or linter slowed down by a busy machine is not over budget while one that computes
// for too long still is. A rollout must not fail because the machine is busy, and a hostile
// input (a type-instantiation bomb, a linter's worst case) computes: its CPU time grows at the
// rate it gets a core, and it is stopped once it has used its budget.
//
// The CPU time is /proc/PID/stat's utime + stime (every thread of the process), read every
// TICK_MS. A wall-clock backstop, WALL_FACTOR times the budget, still ends a run that stalls
// without computing (a run that gets a fifth of a core, e.g. load 10 on 2 cores, finishes
// within it). Where /proc cannot be read (not Linux), the budget is wall time, as before.
import fs from "node:fs";

export const WALL_FACTOR = 5;
const TICK_MS = 20;
const USER_HZ = 100;  // /proc's clock ticks per second: fixed at 100 in Linux's user-space ABI

/** CPU milliseconds (user + system, all threads) process `pid` has used, or null if unreadable. */
export function cpuTimeMs(pid) {
  let stat;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return null;
  }
  // fields after the command name (which may hold spaces and parentheses): state is field 3,
  // utime and stime are fields 14 and 15
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? (ticks * 1000) / USER_HZ : null;
}

/**
 * Call `onExpired(what)` once process `pid` has used `budgetMs` of CPU time from now (`what`:
 * "cpu"), or once WALL_FACTOR x `budgetMs` of wall time has passed ("wall"); at most once.
 * Returns a function that stops the watch. A process that is gone stops being counted (its
 * exit is reported by whoever spawned it).
 */
export function watchCpuBudget(pid, budgetMs, onExpired) {
  const start = pid === undefined ? null : cpuTimeMs(pid);
  if (start === null) {
    const timer = setTimeout(() => onExpired("wall"), budgetMs);
    return () => clearTimeout(timer);
  }
  const wallEnd = Date.now() + WALL_FACTOR * budgetMs;
  const timer = setInterval(() => {
    const now = cpuTimeMs(pid);
    let what = null;
    if (now !== null && now - start >= budgetMs) what = "cpu";
    else if (Date.now() >= wallEnd) what = "wall";
    if (what === null) return;
    clearInterval(timer);
    onExpired(what);
  }, Math.min(TICK_MS, budgetMs));
  return () => clearInterval(timer);
}
