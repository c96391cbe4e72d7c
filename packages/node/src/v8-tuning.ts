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
 * Applies the agent's V8 tuning to this process, before the agent's modules run. For the
 * `kubelet-kit` command only: the library never changes the flags of a program that embeds it.
 * A budget given on Node's own command line wins.
 */
export function applyAgentV8Tuning(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((a) => /^--interrupt[-_]budget(=|$)/.test(a))) return false;
  v8.setFlagsFromString(`--interrupt-budget=${agentInterruptBudget}`);
  return true;
}
