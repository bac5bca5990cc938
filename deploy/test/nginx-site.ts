/**
 * The nginx server block docs/deploy.md shows, as the proxy test runs it. Per service: the body
 * limit (gallery uploads up to 576 MiB in one request, tus chunks smaller; platform script
 * requests and emails up to 10 MiB), request bodies streamed to the service (not spooled), no
 * response buffering and long read timeouts for SSE, and the forwarded headers TRUST_PROXY reads.
 */
export const BODY_LIMIT = { gallery: "600m", platform: "16m", bridge: "1m" } as const;

export function nginxSiteConfig(o: {
  name: keyof typeof BODY_LIMIT;
  listen: string;
  serverName: string;
  upstream: string;
  cert: string;
  key: string;
}): string {
  return `  server {
    listen ${o.listen};
    server_name ${o.serverName};
    ssl_certificate ${o.cert};
    ssl_certificate_key ${o.key};
    client_max_body_size ${BODY_LIMIT[o.name]};
    location / {
      proxy_pass http://${o.upstream};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_request_buffering off;
      proxy_buffering off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
    }
  }
`;
}
