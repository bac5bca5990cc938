import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, type Page } from "./api.js";
import { t } from "./i18n.js";

export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.body.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

export interface Resource<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Load something when `deps` change; stale answers of an earlier load are dropped. */
export function useResource<T>(load: () => Promise<T>, deps: unknown[]): Resource<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  const seq = useRef(0);
  const run = useCallback(() => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true, error: null }));
    load().then(
      (data) => mine === seq.current && setState({ data, error: null, loading: false }),
      (error) => mine === seq.current && setState((s) => ({ data: s.data, error, loading: false })),
    );
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

/** Run a mutation, tracking busy and error state for the form that started it. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = useCallback(async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, setError, run };
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const code = error instanceof ApiError ? error.body.code : null;
  return (
    <p class="error" role="alert">
      {errorMessage(error)}
      {code && <span class="code"> ({code})</span>}
    </p>
  );
}

export function Loading({ resource }: { resource: Resource<unknown> }) {
  if (resource.error) {
    return (
      <div class="error-block">
        <ErrorNote error={resource.error} />
        <button type="button" onClick={resource.reload}>
          {t("retry")}
        </button>
      </div>
    );
  }
  if (resource.loading && resource.data === undefined) return <p class="muted">{t("loading")}</p>;
  return null;
}

export function Field(props: { label: string; hint?: string; children: ComponentChildren }) {
  return (
    <label class="field">
      <span>{props.label}</span>
      {props.children}
      {props.hint && <small class="muted">{props.hint}</small>}
    </label>
  );
}

export function Section(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  return (
    <section class="card">
      <header class="card-head">
        <h2>{props.title}</h2>
        {props.actions && <div class="actions">{props.actions}</div>}
      </header>
      {props.children}
    </section>
  );
}

/** A button that asks before doing something destructive. */
export function ConfirmButton(props: {
  label: string;
  confirm: string;
  onConfirm: () => void;
  disabled?: boolean;
  class?: string;
}) {
  return (
    <button
      type="button"
      class={props.class ?? "danger"}
      disabled={props.disabled}
      onClick={() => {
        if (window.confirm(props.confirm)) props.onConfirm();
      }}
    >
      {props.label}
    </button>
  );
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="muted empty">{children}</p>;
}

/** Parse a JSON text field; an empty field is `undefined`. Throws a readable message otherwise. */
export function parseJsonField(label: string, text: string): unknown {
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(t("not_json", { label, reason: errorMessage(err) }));
  }
}

export interface Paged<T> extends Resource<T[]> {
  hasMore: boolean;
  more: () => void;
}

/** A cursor-paginated list (`{items, next_cursor}`): first page on `deps` change, more on demand. */
export function usePaged<T>(path: (cursor: string | null) => string, deps: unknown[]): Paged<T> {
  const [state, setState] = useState<{
    items: T[] | undefined;
    cursor: string | null;
    error: unknown;
    loading: boolean;
  }>({ items: undefined, cursor: null, error: null, loading: true });
  const seq = useRef(0);
  const load = (cursor: string | null, append: boolean) => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true, error: null }));
    api.get<Page<T>>(path(cursor)).then(
      (page) =>
        mine === seq.current &&
        setState((s) => ({
          items: append ? [...(s.items ?? []), ...page.items] : page.items,
          cursor: page.next_cursor,
          error: null,
          loading: false,
        })),
      (error) => mine === seq.current && setState((s) => ({ ...s, error, loading: false })),
    );
  };
  const reload = useCallback(() => load(null, false), deps);
  useEffect(reload, [reload]);
  return {
    data: state.items,
    error: state.error,
    loading: state.loading,
    reload,
    hasMore: state.cursor !== null,
    more: () => state.cursor !== null && load(state.cursor, true),
  };
}

export function MoreButton({ paged }: { paged: Paged<unknown> }) {
  if (!paged.hasMore) return null;
  return (
    <button type="button" disabled={paged.loading} onClick={paged.more}>
      {paged.loading ? t("loading") : t("load_more")}
    </button>
  );
}
