// Imported first by the `kubelet-kit` command, so that the tuning holds before the agent's
// modules run (see v8-tuning.ts).
import { applyAgentV8Tuning } from './v8-tuning.js';

applyAgentV8Tuning();
