import { defineConfig } from "vite";

// Served under /console/ (the dev gateway locally, CloudFront + S3 on AWS). The CSP allows no
// inline script and no data: URL, so nothing is inlined and no module-preload polyfill (an inline
// script) is emitted.
export default defineConfig({
  base: "/console/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
  },
});
