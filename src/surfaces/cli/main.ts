#!/usr/bin/env node
import { processIo } from './cli-io.js';
import { runCli } from './cli-runner.js';

const io = processIo();
// A reader that closes the pipe early (`engram list | head -1`) is not an error.
io.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});
process.exitCode = await runCli(process.argv.slice(2), io);
