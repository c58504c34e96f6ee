#!/usr/bin/env bash
# Rebuilds ag-ui-client-1.0.0.mjs: the pinned @ag-ui/client (tests/peers/package.json) and its
# dependencies as one browser ES module, so the page needs no build step and no CDN.
# Needs node and the peers' node_modules (scripts/peers.sh); fetches esbuild with npm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
cd "$here"
modules="$repo/tests/peers/node_modules"
version=$(node -p "require('$modules/@ag-ui/client/package.json').version")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm init -y >/dev/null && npm install --no-audit --no-fund esbuild@0.28.2 >/dev/null)
echo 'export { HttpAgent, EventType } from "@ag-ui/client";' >"$work/entry.mjs"
NODE_PATH="$modules" "$work/node_modules/.bin/esbuild" "$work/entry.mjs" --bundle --format=esm \
  --platform=browser --target=es2022 --minify --legal-comments=none \
  --banner:js="/* @ag-ui/client $version and its dependencies, bundled by build.sh; licences in LICENSES.txt */" \
  --metafile="$work/meta.json" --outfile="$here/ag-ui-client-$version.mjs"
# The licence of every package the bundle holds, in LICENSES.txt.
(cd "$here" && node - "$work/meta.json" "$modules" >"$here/LICENSES.txt" <<'JS'
const fs = require("fs"), path = require("path");
const [meta, modules] = process.argv.slice(2);
const inputs = Object.keys(Object.values(require(meta).outputs)[0].inputs);
const roots = new Set();
for (const file of inputs) {
  const m = file.match(/^(.*node_modules\/(@[^/]+\/[^/]+|[^@/][^/]*))\//);
  if (m) roots.add(path.resolve(m[1]));
}
const out = ["Packages bundled in the ES module beside this file, with their licences.", ""];
for (const root of [...roots].sort()) {
  const pkg = require(path.join(root, "package.json"));
  const file = fs.readdirSync(root).find((f) => /^licen[cs]e/i.test(f));
  out.push("=".repeat(78), `${pkg.name} ${pkg.version} (${pkg.license})`, "=".repeat(78));
  out.push(file ? fs.readFileSync(path.join(root, file), "utf8").trim() : `License: ${pkg.license} (no licence file in the package)`, "");
}
console.log(out.join("\n"));
JS
)
echo "built ag-ui-client-$version.mjs"
