#!/usr/bin/env node
// The `kiln` command: runs the built CLI (dist/main.js sets the exit code).
import '../dist/main.js';
