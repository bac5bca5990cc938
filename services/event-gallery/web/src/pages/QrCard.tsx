import { useEffect, useState } from "preact/hooks";
import QRCode from "qrcode";
import { eventName, joinUrl, publicEvent } from "../branding.js";
import { lang, t } from "../i18n.js";
import { useStore } from "../store.js";

/**
 * A printable A6 card: event name, the join QR, the address in words. Print CSS sets the page to
 * A6 without margins and hides everything else; on screen it is shown as a preview with a button.
 */
export function QrCardPage() {
  const pub = useStore(publicEvent);
  useStore(lang);
  const link = joinUrl(pub);
  const [svg, setSvg] = useState<string | null>(null);
  useEffect(() => {
    // SVG stays sharp at any print resolution.
    QRCode.toString(link, { type: "svg", margin: 0, errorCorrectionLevel: "M" }).then(setSvg, () =>
      setSvg(null),
    );
  }, [link]);
  const welcome = pub ? (lang.value === "de" ? pub.welcome_text_de : pub.welcome_text_en) : "";
  return (
    <div class="card-page">
      <div class="a6" data-testid="qr-card">
        <h1>{eventName(pub?.name)}</h1>
        {welcome && <p class="welcome">{welcome}</p>}
        {svg && <div class="qr" role="img" aria-label={link} dangerouslySetInnerHTML={{ __html: svg }} />}
        <p class="scan">{t("card_scan")}</p>
        <p class="url">
          {t("card_or_open")} <strong>{link.replace(/^https?:\/\//, "")}</strong>
        </p>
      </div>
      <div class="no-print card-actions">
        <button type="button" class="primary" onClick={() => print()}>
          {t("print")}
        </button>
        <button type="button" onClick={() => history.back()}>
          {t("back")}
        </button>
      </div>
    </div>
  );
}
