import { createHash } from 'node:crypto';
import { PAGE_SCRIPT } from './page-script.js';

const PAGE_STYLE = `
:root { color-scheme: light dark; --fg: #1d2430; --muted: #6b7280; --line: #d8dde5; --bg: #f7f8fa; --card: #fff;
  --up: #107a3e; --down: #b42318; --warn: #b54708; font: 14px/1.45 system-ui, sans-serif; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e8eb; --muted: #9aa3af; --line: #2f3644; --bg: #14171c; --card: #1b1f26;
  --up: #4ade80; --down: #f87171; --warn: #fbbf24; } }
body { margin: 0; background: var(--bg); color: var(--fg); }
header { display: flex; gap: 1rem; align-items: baseline; padding: .8rem 1.2rem; border-bottom: 1px solid var(--line); }
header h1 { font-size: 1.1rem; margin: 0; }
#status { color: var(--muted); } #status.error { color: var(--down); }
main { padding: 1rem 1.2rem; display: grid; gap: 1rem; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .6rem .9rem; overflow-x: auto; }
h2 { font-size: .95rem; margin: .2rem 0 .5rem; display: flex; gap: 1rem; align-items: baseline; }
h2 small, .note { color: var(--muted); font-weight: normal; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { color: var(--muted); font-weight: 600; font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; }
td.empty, li.empty { color: var(--muted); font-style: italic; }
code { font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-all; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 9px; border: 1px solid currentColor; font-size: .8rem; }
.badge.up { color: var(--up); } .badge.down { color: var(--down); }
tr[data-status=down] td { color: var(--down); }
ol { list-style: none; margin: 0; padding: 0; max-height: 22rem; overflow-y: auto; }
li.ev { display: flex; gap: .6rem; align-items: baseline; padding: .15rem 0; border-bottom: 1px dotted var(--line); }
li.ev time { color: var(--muted); font-family: ui-monospace, monospace; font-size: .8rem; }
li.ev .detail, li.ev .prim { color: var(--muted); }
li.lost .badge, li.quorum-unavailable .badge, li.extend-failed .badge, li.force-released .badge { color: var(--down); }
li.contention .badge, li.failed .badge { color: var(--warn); } li.acquired .badge { color: var(--up); }
button { font: inherit; cursor: pointer; }
#release-panel { border-color: var(--down); }
#release-panel input { font: inherit; min-width: 20rem; }
`;

function sha256(text: string): string {
  return `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
}

/**
 * The page's Content-Security-Policy: its own inline script and style by hash, requests to
 * its own origin only, nothing else (no images, frames, forms posting elsewhere, plugins).
 */
export const PAGE_CSP = [
  "default-src 'none'",
  `script-src ${sha256(PAGE_SCRIPT)}`,
  `style-src ${sha256(PAGE_STYLE)}`,
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The dashboard page: fixed markup (no server data in it), settings as data attributes. */
export function renderPage(settings: { readonly refreshMs: number; readonly allowForceRelease: boolean }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Redlock locks</title>
<style>${PAGE_STYLE}</style>
</head>
<body data-refresh="${settings.refreshMs}" data-release="${settings.allowForceRelease ? '1' : '0'}">
<header><h1>Redlock locks</h1><span id="status">loading…</span></header>
<main>
<section><h2>Nodes</h2>
<table><thead><tr><th>node</th><th>status</th><th>round trip</th><th>role</th><th>restart rule</th><th>error</th></tr></thead>
<tbody id="nodes"></tbody></table></section>
<section><h2>Locks held <small id="listing"></small></h2>
<table><thead><tr><th>resource</th><th>kind</th><th>holder</th><th>fencing token</th><th>ttl left</th><th>held on</th><th>waiters</th><th></th></tr></thead>
<tbody id="locks"></tbody></table>
<p class="note">holder: first 12 hex digits of SHA-256 of the owner token (tells holders apart, reveals nothing).</p></section>
<section id="release-panel" hidden><h2>Force release</h2>
<form id="release-form"><p>Frees <code id="release-resource"></code> on every node, whoever holds it, and raises its fencing counter.
The holder is not told: without fencing, two holders would run at once. Type the resource name to confirm.</p>
<input id="release-confirm" autocomplete="off" spellcheck="false" aria-label="resource name, again">
<button type="submit">force release</button> <button type="button" id="release-cancel">cancel</button>
<p id="release-result" class="note"></p></form></section>
<section><h2>Timeline <small id="rate"></small> <small id="since"></small></h2><ol id="events"></ol></section>
</main>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}
