/** One server-sent event. */
export interface SseEvent {
  event: string;
  data: string;
  id: string | null;
}

/** Parses a text/event-stream body (WHATWG rules: `event`, `data` lines joined, `id`, comments skipped). */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buf = "";
  let event = "message";
  let data: string[] = [];
  let id: string | null = null;
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let nl = buf.search(/\r?\n/);
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(buf[nl] === "\r" ? nl + 2 : nl + 1);
      if (line === "") {
        if (data.length > 0) yield { event, data: data.join("\n"), id };
        event = "message";
        data = [];
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
        else if (field === "id") id = value;
      }
      nl = buf.search(/\r?\n/);
    }
  }
}
