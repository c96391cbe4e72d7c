#!/usr/bin/env -S node --max-semi-space-size=1 --memory-reducer-single-gc
// The `kubelet-kit` command: a stable file for npm to link, loading the built CLI as bundled
// (dist/agent/, scripts/bundle-agent.mjs), which costs the agent about 6 MiB less RSS than the
// same program as tsc writes it. `node dist/cli.js` runs that, for readable stack traces.
//
// The young generation is capped at two 1 MiB semi-spaces, which only a flag given as V8 starts
// can do. Under a node's load V8 grew it to 2 × 8 MiB and kept the pages: with 110 pods on
// containerd 107 MiB RSS, 92–94 MiB with the cap, the CPU with 110 idle pods unchanged beyond
// the machine's noise (see the package README, "Footprint"). `node <this file>` runs without
// the cap, as does a program that embeds the library.
//
// V8's memory reducer, which runs full GCs while a program allocates slowly, runs one GC each
// time it starts rather than up to three. An agent with 110 idle pods on containerd allocates
// slowly (444 KiB/s since relists compare their items without allocating), and three cost CPU:
// 76.9-82.7 MiB and 0.022-0.031 cores (ten runs, an earlier build). On containerd with 110 pods,
// in alternation, four runs each: without the reducer 81.8-83.7 MiB and 0.021-0.024 cores, with
// one GC 74.8-75.9 MiB and 0.020-0.022 cores. Also a flag V8 reads only as it starts.
//
// The V8 flags first, before any module of the agent runs (ES modules run in import order); the
// bundle sets them again, to the same values.
import '../dist/apply-v8-tuning.js';
import '../dist/agent/cli.js';
