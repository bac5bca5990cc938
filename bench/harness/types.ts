/** What a server module's start function returns (it runs in its own child process). */
export interface ServerTarget {
  /** Base URL the server listens on (`http://127.0.0.1:<port>`). */
  url: string;
  /** JSON-serializable facts the orchestrator needs (tokens, ids). */
  info?: Record<string, unknown>;
  /** Setup or trigger actions the orchestrator may run inside the server process. */
  commands?: Record<string, (arg: unknown) => Promise<unknown> | unknown>;
  close(): Promise<void>;
}

/** Message channel between a task child and the orchestrator (for multi-step clients). */
export interface TaskIo {
  send(message: unknown): Promise<void>;
  next(): Promise<unknown>;
}

/** One HTTP load run, measured by autocannon in its own process. */
export interface LoadOptions {
  path: string;
  method?: string;
  headers?: Record<string, string>;
  /** Requests take these header sets in turn (added to `headers`), e.g. one per signed-in viewer. */
  headerSets?: Record<string, string>[];
  body?: string;
  connections?: number;
  /** Seconds (default 10). */
  duration?: number;
  /** Requests to send first, unmeasured (default 500). */
  warmup?: number;
  /**
   * Requests per second in all (autocannon's overallRate); default: as fast as the connections
   * go. A fixed rate both sides of an A/B reach keeps their batching alike, so CPU per request
   * compares without the throughput swings a loaded machine causes.
   */
  rate?: number;
}

export interface LoadFigures {
  label: string;
  requests: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  /** Server process CPU (user + system, from the OS) per request, in ms. */
  cpuMsPerReq: number;
  /** Server process CPU over the run, as a share of one core. */
  cpuCores: number;
  /** CPU the load generator itself used, as a share of one core. */
  loaderCores: number;
  /** Requests/s of this row divided by the named baseline row's. */
  ratio?: number;
  baseline?: string;
}

export interface Figure {
  label: string;
  value: number;
  unit: string;
  /** Optional baseline figure (same unit) and the ratio value/baseline. */
  baseline?: { label: string; value: number };
  ratio?: number;
  note?: string;
}

export interface MachineInfo {
  cores: number;
  cpuModel: string;
  node: string;
  loadavgStart: number[];
  loadavgEnd: number[];
}
