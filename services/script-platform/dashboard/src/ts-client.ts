import { allScripts } from "./api.js";
import { lang } from "./i18n.js";
import type { ModuleSource, TsReply, TsRequest } from "./ts-protocol.js";

type Body<T> = T extends unknown ? Omit<T, "id"> : never;

/** The page's side of the TypeScript worker: one worker per page, answers matched by id. */
export class TsClient {
  private readonly worker: Worker;
  private next = 1;
  private readonly waiting = new Map<number, (r: TsReply) => void>();
  private ready: Promise<unknown>;

  constructor(appId: string, sdk: Promise<string>) {
    this.worker = new Worker(new URL("./ts-worker.ts", import.meta.url), { type: "module" });
    this.worker.onmessage = (e: MessageEvent<TsReply>) => {
      this.waiting.get(e.data.id)?.(e.data);
      this.waiting.delete(e.data.id);
    };
    // Module scripts of the app, so `import { x } from "name"` resolves; without them imports are `any`.
    const modules = allScripts(appId)
      .then((all) =>
        all
          .filter((s) => s.kind === "module")
          .map(
            (s): ModuleSource => ({ name: s.name, source: s.source, language: s.language ?? "javascript" }),
          ),
      )
      .catch(() => []);
    this.ready = Promise.all([sdk, modules]).then(([text, mods]) =>
      this.send({ type: "setup", sdk: text, modules: mods, lang }),
    );
  }

  private send(req: Body<TsRequest>): Promise<TsReply> {
    const id = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.worker.postMessage({ ...req, id } as TsRequest);
    });
  }

  async request(req: Body<TsRequest>): Promise<TsReply> {
    await this.ready;
    return this.send(req);
  }

  destroy() {
    this.worker.terminate();
    for (const resolve of this.waiting.values()) resolve({ id: 0, type: "failed", message: "closed" });
    this.waiting.clear();
  }
}
