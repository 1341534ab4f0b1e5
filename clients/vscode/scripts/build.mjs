// Bundle the extension with esbuild: one file, `vscode` left external (VS Code provides it).
import { build } from "esbuild";

await build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  external: ["vscode"],
  format: "cjs",
  platform: "node",
  target: "node20",
  sourcemap: true,
  minify: true,
  logLevel: "warning",
});
