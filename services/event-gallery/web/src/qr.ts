import { useEffect, useState } from "preact/hooks";
import QRCode from "qrcode";

/** The join link as a QR image (a data URL), regenerated when the link changes. */
export function useQrDataUrl(link: string, width: number): string | null {
  const [qr, setQr] = useState<string | null>(null);
  useEffect(() => {
    QRCode.toDataURL(link, { width, margin: 1 }).then(setQr, () => setQr(null));
  }, [link, width]);
  return qr;
}
