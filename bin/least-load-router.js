#!/usr/bin/env node
// The CLI ships compiled: npm ci runs `prepare`, which builds dist/.
import '../dist/cli/run.js';
