/**
 * The dashboard page's script, inlined in the page (no bundle, no CDN). Every value from the
 * server goes into the page through `textContent`, `dataset` or `value`, never as HTML: a
 * resource named `<img src=x onerror=alert(1)>` shows as that text. The page's CSP allows this
 * script by its hash only, so even a mistake here could not run injected code.
 *
 * Plain ES2020 in a string: it is served as it is, so no template literals in it.
 */
export const PAGE_SCRIPT = `
(function () {
  'use strict';
  var body = document.body;
  var refreshMs = Number(body.dataset.refresh) || 1000;
  var canRelease = body.dataset.release === '1';
  var base = location.pathname.replace(/\\/+$/, '');
  var timer = null;
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function row(cells) {
    var tr = el('tr');
    cells.forEach(function (c) {
      var td = el('td');
      if (c instanceof Node) td.append(c); else if (c !== undefined && c !== null) td.textContent = String(c);
      tr.append(td);
    });
    return tr;
  }
  function fill(tbody, rows, columns, empty) {
    if (rows.length > 0) return tbody.replaceChildren.apply(tbody, rows);
    var td = el('td', empty, 'empty');
    td.colSpan = columns;
    var tr = el('tr');
    tr.append(td);
    tbody.replaceChildren(tr);
  }
  function seconds(ms) { return ms >= 0 ? (ms / 1000).toFixed(1) + ' s' : '-'; }
  function clock(at) {
    var d = new Date(at);
    return d.toLocaleTimeString([], { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
  }

  function renderNodes(data) {
    var rows = data.nodes.map(function (n) {
      var tr = row([n.node, el('span', n.status, 'badge ' + n.status),
        n.latencyMs !== undefined ? n.latencyMs.toFixed(2) + ' ms' : '-', n.role || '-', n.restartRule, n.error || '']);
      tr.dataset.node = n.node;
      tr.dataset.status = n.status;
      return tr;
    });
    fill($('nodes'), rows, 6, 'no nodes');
  }

  function kindText(l) {
    if (l.kind === 'semaphore') return 'semaphore ' + l.holders + ' of ' + (l.permitsAtLeast > l.holders ? '\\u2265' + l.permitsAtLeast : 'N \\u2265 ' + l.permitsAtLeast);
    if (l.kind === 'read') return 'read \\u00d7' + l.holders;
    return l.kind;
  }
  function waitersCell(l) {
    var span = el('span', String(l.waiters));
    if (l.queue && l.queue.length > 0) {
      span.title = 'queue: ' + l.queue.map(function (q) { return '#' + q.ticket + ' ' + q.waiter; }).join(', ');
      span.append(el('small', ' (fair queue: ' + l.queue.map(function (q) { return '#' + q.ticket; }).join(' \\u2192 ') + ')'));
    }
    return span;
  }
  function renderLocks(data) {
    var rows = data.locks.map(function (l) {
      var action = null;
      // Force release frees the lock key: readers' leases and semaphore slots only expire.
      if (canRelease && (l.kind === 'mutex' || l.kind === 'fair')) {
        action = el('button', 'release\\u2026', 'release');
        action.type = 'button';
        action.addEventListener('click', function () { openRelease(l.resource); });
      }
      var tr = row([el('code', l.resource), kindText(l), l.holder || '-', l.fencingToken || '-', seconds(l.ttlMs),
        l.heldOn + '/' + data.nodes.length, waitersCell(l), action]);
      tr.dataset.resource = l.resource;
      return tr;
    });
    fill($('locks'), rows, 8, 'no lock held');
    var notes = [];
    if (data.listing.truncated) notes.push('partial: the SCAN page limit was reached on a node (raise scan.maxPages)');
    data.listing.errors.forEach(function (e) { notes.push(e.node + ': ' + e.error); });
    $('listing').textContent = notes.join(' \\u00b7 ');
  }

  function renderTimeline(data) {
    var t = data.timeline;
    $('rate').textContent = t.acquisitionsPerSecond.toFixed(2) + ' acquisitions/s';
    $('since').textContent = t.since ? 'events since ' + clock(t.since) : '';
    var items = t.events.map(function (e) {
      var li = el('li', null, 'ev ' + e.type);
      li.append(el('time', clock(e.at)), el('span', e.type, 'badge'), el('code', e.resources.join(', ')));
      if (e.primitive) li.append(el('span', e.primitive, 'prim'));
      if (e.detail) li.append(el('span', e.detail, 'detail'));
      return li;
    });
    if (items.length === 0) items = [el('li', 'no events yet', 'empty')];
    $('events').replaceChildren.apply($('events'), items);
  }

  function openRelease(resource) {
    $('release-panel').hidden = false;
    $('release-resource').textContent = resource;
    $('release-confirm').value = '';
    $('release-confirm').focus();
    $('release-result').textContent = '';
  }
  function submitRelease(ev) {
    ev.preventDefault();
    var resource = $('release-resource').textContent;
    var confirm = $('release-confirm').value;
    fetch(base + '/release', {
      method: 'POST', credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ resource: resource, confirm: confirm })
    }).then(function (res) {
      return res.json().then(function (body) {
        $('release-result').textContent = res.ok
          ? 'released on ' + body.released + ' node(s); fencing counter now ' + body.fencingCounter
          : 'refused: ' + (body.message || res.status);
        if (res.ok) poll();
      });
    }).catch(function (err) { $('release-result').textContent = 'failed: ' + err.message; });
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(poll, refreshMs);
  }
  function poll() {
    // A hidden tab asks nothing of the nodes; it polls again once shown.
    if (document.hidden) return;
    fetch(base + '/data', { credentials: 'same-origin', cache: 'no-store', headers: { accept: 'application/json' } })
      .then(function (res) {
        if (!res.ok) throw new Error('HTTP ' + res.status);
        return res.json();
      })
      .then(function (data) {
        renderNodes(data);
        renderLocks(data);
        renderTimeline(data);
        $('status').textContent = 'updated ' + clock(data.at) + (data.quorum ? ' \\u00b7 quorum ' + data.quorum + ' of ' + data.nodes.length : '');
        $('status').className = 'ok';
        body.dataset.updates = String(Number(body.dataset.updates || 0) + 1);
      })
      .catch(function (err) {
        $('status').textContent = 'no data: ' + err.message;
        $('status').className = 'error';
      })
      .then(schedule);
  }

  $('release-form').addEventListener('submit', submitRelease);
  $('release-cancel').addEventListener('click', function () { $('release-panel').hidden = true; });
  document.addEventListener('visibilitychange', function () { if (!document.hidden) poll(); });
  poll();
})();
`;
