// html-to-text 10 ships no type declarations; only the part the bridge calls is declared.
declare module "html-to-text" {
  export interface SelectorDefinition {
    selector: string;
    format?: string;
    options?: Record<string, unknown>;
  }
  export interface HtmlToTextOptions {
    wordwrap?: number | false | null;
    preserveNewlines?: boolean;
    selectors?: SelectorDefinition[];
    decodeEntities?: boolean;
    limits?: { maxInputLength?: number; maxDepth?: number; maxChildNodes?: number; ellipsis?: string };
  }
  export function convert(html: string, options?: HtmlToTextOptions): string;
  export function compile(options?: HtmlToTextOptions): (html: string) => string;
}
