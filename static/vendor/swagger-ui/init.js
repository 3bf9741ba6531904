// Starts Swagger UI on /docs from this server's own schema (no inline script: the CSP forbids it).
// The schema's URL is relative to /docs, so it is found under a reverse proxy's prefix too.
window.ui = SwaggerUIBundle({
  url: "openapi.json",
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
