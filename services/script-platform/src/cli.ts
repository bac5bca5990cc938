#!/usr/bin/env node
// The `platform` command for script authors (README, "Command-line client").
import { processIo } from "./cli/io.js";
import { main } from "./cli/main.js";

const io = processIo();
process.exitCode = await main(process.argv.slice(2), io);
io.close();
