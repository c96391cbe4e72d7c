#!/usr/bin/env node
// The `kubelet-kit` command: a stable file for npm to link, loading the built CLI.
import '../dist/cli.js';
