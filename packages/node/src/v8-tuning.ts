import v8 from 'node:v8';

/**
 * The profiler budget (bytecodes run) after which V8 considers optimizing a function with
 * TurboFan: four times Node 20's default (67,584).
 *
 * Why: the agent's work comes in bursts (a node's pods arriving, a relist) of code that runs a
 * few hundred times and then idles. With the default, TurboFan compiled much of it on a
 * background thread, on the two cores the container runtime needs: in a burst of 110 pods on
 * containerd the agent's background threads used 0.27–0.30 CPU-seconds (compilation most of
 * it), and 0.13–0.14 with this budget, while its main thread used no more.
 * Code that stays hot is still optimized, a little later.
 */
const agentInterruptBudget = 4 * 67_584;

/**
 * After each full GC, V8 lets the old generation grow to this percentage of what survived before
 * the next one, instead of a factor it picks from the GC's speed against the program's allocation
 * rate (1.1 to 4 here). A long-running agent on a busy node allocates steadily (CRI replies,
 * /proc files, statuses) while its live heap stays about 30 MiB; V8 then chose factors near the
 * top and kept the pages. In the soak on containerd with 110 pods churned (bench/soak.bench.mjs,
 * kubelet-kit issue #28; 6-minute runs) old space swung between 33 and 85 MiB and the RSS between
 * 123 and 192 MiB; with 30% old space stayed at 28–36 MiB and the RSS at 105–115 MiB. The price:
 * about five times as many mark-compacts, each of a small heap (the agent's CPU in the churn
 * 0.179 against 0.160–0.162 cores). Node does not allow the flag in NODE_OPTIONS; on its command
 * line it wins.
 */
const agentHeapGrowingPercent = 30;

/** The tunings, each with the Node/V8 flags that, given by the user, leave it alone. */
const tunings: readonly { readonly flag: string; readonly userFlag: RegExp }[] = [
  { flag: `--interrupt-budget=${agentInterruptBudget}`, userFlag: /^--interrupt[-_]budget(=|$)/ },
  {
    flag: `--heap-growing-percent=${agentHeapGrowingPercent}`,
    userFlag: /^--heap[-_]growing[-_]percent(=|$)/,
  },
];

/**
 * Applies the agent's V8 tuning to this process, before the agent's modules run. For the
 * `kubelet-kit` command only: the library never changes the flags of a program that embeds it.
 * A flag of the same kind given on Node's own command line or in `NODE_OPTIONS` wins. Returns
 * whether anything was set.
 */
export function applyAgentV8Tuning(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): boolean {
  const given = [...execArgv, ...nodeOptions.split(/\s+/).filter(Boolean)];
  let applied = false;
  for (const { flag, userFlag } of tunings) {
    if (given.some((a) => userFlag.test(a))) continue;
    v8.setFlagsFromString(flag);
    applied = true;
  }
  return applied;
}
