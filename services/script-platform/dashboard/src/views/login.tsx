import { useState } from "preact/hooks";
import { type Admin, api, login } from "../api.js";
import { t } from "../i18n.js";
import { ErrorNote, Field, useAction } from "../ui.js";

export function LoginPage({ onLogin }: { onLogin: (admin: Admin) => void }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const action = useAction();
  return (
    <main class="narrow">
      <h1>{t("brand")}</h1>
      <form
        class="card stack"
        onSubmit={(e) => {
          e.preventDefault();
          action.run(async () => {
            await login(username, password);
            const me = await api.get<{ admin: Admin }>("me");
            setPassword("");
            onLogin(me.admin);
          });
        }}
      >
        <h2>{t("sign_in")}</h2>
        <Field label={t("username")}>
          <input
            name="username"
            autoComplete="username"
            required
            value={username}
            onInput={(e) => setUsername(e.currentTarget.value)}
          />
        </Field>
        <Field label={t("password")}>
          <input
            name="password"
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </Field>
        <ErrorNote error={action.error} />
        <button type="submit" class="primary" disabled={action.busy}>
          {action.busy ? t("signing_in") : t("sign_in")}
        </button>
      </form>
    </main>
  );
}
