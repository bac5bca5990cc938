import { isIP } from "node:net";

/**
 * Which push endpoints the server will POST to. The browser picks the endpoint (its vendor's push
 * service), so a host could otherwise make the server call anything: only https to a named host
 * is accepted, never a bare IP address or localhost. Tests pass their own rule for a loopback
 * http receiver (AppDeps.pushEndpointAllowed).
 */
export type EndpointRule = (url: URL) => boolean;

export const publicHttpsOnly: EndpointRule = (url) => {
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return (
    url.protocol === "https:" &&
    isIP(host) === 0 &&
    host !== "localhost" &&
    !host.endsWith(".localhost") &&
    host.includes(".")
  );
};
