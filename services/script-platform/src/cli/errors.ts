/** Exit codes of the `platform` command (README, "Command-line client"). */
export const EXIT = {
  ok: 0,
  /** The platform refused, a run ended in an error, the network failed. */
  failed: 1,
  /** Unknown command or option, a bad argument. */
  usage: 2,
  /** No credentials, or the platform did not accept them. */
  auth: 3,
} as const;

/** An error the CLI prints as one line (no stack) before exiting with `code`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: number = EXIT.failed,
  ) {
    super(message);
  }
}
