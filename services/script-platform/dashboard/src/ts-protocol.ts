/** Messages between the editor and the TypeScript worker (ts-worker.ts). Positions are offsets. */
export interface ModuleSource {
  name: string;
  source: string;
  language: "javascript" | "typescript";
}

export type TsRequest =
  | { id: number; type: "setup"; sdk: string; modules: ModuleSource[]; lang: "en" | "de" }
  | { id: number; type: "diagnose"; source: string; typescript: boolean }
  | { id: number; type: "complete"; source: string; typescript: boolean; pos: number }
  | {
      id: number;
      type: "detail";
      source: string;
      typescript: boolean;
      pos: number;
      name: string;
      entrySource: string | null;
    };

export interface TsDiagnostic {
  from: number;
  to: number;
  message: string;
  code: number;
}

export type TsReply =
  | { id: number; type: "ok" }
  | { id: number; type: "failed"; message: string }
  | { id: number; type: "diagnostics"; items: TsDiagnostic[] }
  | {
      id: number;
      type: "completions";
      /** After a `.`: members of the receiver's type. */
      member: boolean;
      items: Array<{ name: string; kind: string; source: string | null }>;
    }
  | { id: number; type: "detail"; signature: string; doc: string };
