// Entry point for running the CLI from source (tests, `tsx src/cli/run.ts`); bin/ runs the built copy.
import { main } from './main.js';

process.exitCode = await main(process.argv);
