#!/usr/bin/env -S node --max-semi-space-size=1 --no-memory-reducer
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
// V8's memory reducer is off: it runs extra full GCs while a program allocates slowly, which an
// agent with 110 idle pods on containerd does (444 KiB/s) since relists compare their items
// without allocating. With it: 76.9–82.7 MiB and 0.022–0.031 cores (ten runs); without it 83.1
// and 83.3 MiB, 0.022 cores, as before that change (84.5–86.5 MiB, 0.019–0.022 cores). Also a
// flag V8 reads only as it starts.
//
// The V8 flags first, before any module of the agent runs (ES modules run in import order); the
// bundle sets them again, to the same values.
import '../dist/apply-v8-tuning.js';
import '../dist/agent/cli.js';
