// The signed-in pages' one script, and only an enhancement: every action on them is a form that works without it.
// Where it runs, a post's buttons (boost, favourite, bookmark) and Follow send the same form with fetch, and the part
// of the page that changed (the post, the Follow form) is taken from the page the form leads back to, in place,
// with the focus kept on the button pressed. Anything unexpected falls back to sending the form as usual.
// A timeline or the notifications listens to the streaming API over a WebSocket of this origin (the session cookie
// is its credential) and offers what is new behind a button; the HTML of each new post or notification comes from
// the server (`/statuses/:id/entry`, `/notifications/:id/entry`), never built here. Keyboard shortcuts as Mastodon's
// web has them: j/k, n, r, f, b, /, ? (listed by ?).
(() => {
  'use strict';
  const ENHANCED = 'form.status-actions, form.follow-form';
  document.documentElement.dataset.enhanced = 'true';

  /**
   * The element of `doc` that stands where the form's part of this page stands: a post by its id, else the form
   * acting on the same post or account (`/statuses/:id/…`, `/accounts/:id/…`).
   */
  function counterpart(doc, form) {
    const post = form.closest('article.status[id]');
    if (post) return { old: post, fresh: doc.getElementById(post.id) };
    const target = new URL(form.action).pathname.replace(/[^/]+$/, '');
    const fresh = [...doc.querySelectorAll(ENHANCED)].find((f) => new URL(f.action, location.href).pathname.startsWith(target));
    return { old: form, fresh };
  }

  async function send(form, submitter) {
    // A button's `formAction` is the page's own address when it has no `formaction` of its own.
    const action = submitter && submitter.hasAttribute('formaction') ? submitter.formAction : form.action;
    const res = await fetch(action, {
      method: 'POST',
      body: new URLSearchParams(new FormData(form, submitter)),
      credentials: 'same-origin',
      headers: { accept: 'text/html' },
    });
    if (!res.ok || new URL(res.url).origin !== location.origin) throw new Error(`answered ${res.status}`);
    return new DOMParser().parseFromString(await res.text(), 'text/html');
  }

  document.addEventListener('submit', async (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.matches(ENHANCED) || form.dataset.plain) return;
    event.preventDefault();
    const submitter = event.submitter;
    const buttons = [...form.querySelectorAll('button')];
    const pressed = buttons.indexOf(submitter);
    form.setAttribute('aria-busy', 'true');
    try {
      const doc = await send(form, submitter);
      const { old, fresh } = counterpart(doc, form);
      if (!fresh) throw new Error('not on the page it led back to');
      const adopted = document.importNode(fresh, true);
      old.replaceWith(adopted);
      const again = adopted.matches('form') ? adopted : adopted.querySelector(ENHANCED);
      const button = again && again.querySelectorAll('button')[pressed];
      if (button) button.focus();
    } catch {
      form.dataset.plain = '1';
      form.removeAttribute('aria-busy');
      form.requestSubmit(submitter || undefined);
    }
  });

  // ---- Live updates -------------------------------------------------------------------------------------------

  const live = document.querySelector('[data-stream]');
  const notificationsLink = document.querySelector('.site-header a[href="/notifications"]');
  let unseenNotifications = 0;

  /** What is new, waiting behind the button: fragments of HTML by id, in the order they came. */
  function liveList(container) {
    const isNotifications = container.dataset.stream === 'user:notification';
    const pending = new Map();
    const wrap = document.createElement('div');
    wrap.className = 'live-banner';
    wrap.setAttribute('role', 'status');
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'secondary';
    button.hidden = true;
    wrap.append(button);
    if (container.tagName === 'OL') container.before(wrap);
    else (container.querySelector('h2') || container.firstChild).after(wrap);

    function label() {
      const n = pending.size;
      button.hidden = n === 0;
      button.textContent = n === 0 ? '' : isNotifications ? `Show ${n} new notification${n === 1 ? '' : 's'}` : `Show ${n} new post${n === 1 ? '' : 's'}`;
    }

    button.addEventListener('click', () => {
      let first = null;
      for (const html of pending.values()) {
        const doc = new DOMParser().parseFromString(html, 'text/html');
        const node = doc.body.firstElementChild;
        if (!node || (node.id && document.getElementById(node.id))) continue;
        const adopted = document.importNode(node, true);
        if (container.tagName === 'OL') container.prepend(adopted);
        else wrap.after(adopted);
        first = adopted;
      }
      pending.clear();
      const empty = container.querySelector('.empty');
      if (empty && first) empty.remove();
      label();
      // The newest is on top: reading goes on from there.
      const target = container.tagName === 'OL' ? container.firstElementChild : wrap.nextElementSibling;
      const post = target && (target.matches('article.status') ? target : target.querySelector('article.status'));
      const focusable = post || target;
      if (focusable) {
        focusable.tabIndex = -1;
        focusable.focus();
      }
    });

    return {
      async add(id) {
        const domId = (isNotifications ? 'n-' : 's-') + id;
        if (pending.has(id) || document.getElementById(domId)) return;
        const path = isNotifications ? `/notifications/${id}/entry` : `/statuses/${id}/entry`;
        const query = new URLSearchParams({ return_to: location.pathname + location.search });
        if (container.dataset.context) query.set('context', container.dataset.context);
        const res = await fetch(`${path}?${query}`, { credentials: 'same-origin', headers: { accept: 'text/html' } });
        // A post this person may not see, or that a filter hides, is not there (404): nothing to show.
        if (!res.ok) return;
        pending.set(id, await res.text());
        label();
      },
      remove(id) {
        pending.delete(id);
        label();
        const gone = document.getElementById(`s-${id}`);
        if (gone && container.contains(gone)) gone.remove();
      },
    };
  }

  function countNotification() {
    if (!notificationsLink) return;
    unseenNotifications += 1;
    notificationsLink.textContent = `Notifications (${unseenNotifications} new)`;
  }

  if (live && 'WebSocket' in window) {
    const list = liveList(live);
    const name = live.dataset.stream;
    const streams = [{ stream: name, tag: live.dataset.tag, list: live.dataset.list }];
    // Home's stream carries the notifications too; other pages ask for them to count them in the header.
    if (name !== 'user' && name !== 'user:notification') streams.push({ stream: 'user:notification' });
    let failures = 0;
    let leaving = false;
    window.addEventListener('pagehide', () => { leaving = true; });

    const connect = () => {
      const socket = new WebSocket(`${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/api/v1/streaming`);
      socket.addEventListener('open', () => {
        failures = 0;
        for (const s of streams) socket.send(JSON.stringify({ type: 'subscribe', ...s }));
      });
      socket.addEventListener('message', (event) => {
        let message;
        try {
          message = JSON.parse(event.data);
        } catch {
          return;
        }
        if (!message || !message.event) return;
        const own = message.stream && message.stream[0] === name;
        if (message.event === 'update' && own && name !== 'user:notification') {
          const status = JSON.parse(message.payload);
          list.add(status.id).catch(() => {});
        } else if (message.event === 'delete') {
          list.remove(String(message.payload));
        } else if (message.event === 'notification') {
          const notification = JSON.parse(message.payload);
          if (name === 'user:notification') list.add(notification.id).catch(() => {});
          else countNotification();
        }
      });
      socket.addEventListener('close', () => {
        if (leaving) return;
        // The stream ends when the session does (signed out elsewhere): after a few refusals in a row, stop trying.
        failures += 1;
        if (failures <= 6) setTimeout(connect, Math.min(60_000, 1000 * 2 ** failures));
      });
      live.dataset.live = 'connecting';
      socket.addEventListener('open', () => { live.dataset.live = 'open'; });
    };
    connect();
  }

  // ---- The schedule's time zone: the browser's own offset at the chosen time (daylight saving included) ----------

  const scheduledAt = document.getElementById('status-scheduled-at');
  const scheduledOffset = document.getElementById('status-scheduled-offset');
  if (scheduledAt && scheduledOffset) {
    const setOffset = () => {
      const at = scheduledAt.value ? new Date(scheduledAt.value) : new Date();
      const minutes = String(-at.getTimezoneOffset());
      if ([...scheduledOffset.options].some((o) => o.value === minutes)) scheduledOffset.value = minutes;
    };
    setOffset();
    scheduledAt.addEventListener('change', setOffset);
  }

  // ---- Keyboard shortcuts ---------------------------------------------------------------------------------------

  const SHORTCUTS = [
    ['j', 'Next post'],
    ['k', 'Previous post'],
    ['n', 'Write a new post'],
    ['r', 'Reply to the post'],
    ['f', 'Favourite the post'],
    ['b', 'Boost the post'],
    ['/', 'Search'],
    ['Esc', 'Leave a text box'],
    ['Ctrl+Enter', 'Send the post being written'],
    ['?', 'Show these shortcuts'],
  ];
  let help = null;

  function showHelp() {
    if (!help) {
      // Made of elements and text nodes (no HTML is parsed).
      help = document.createElement('dialog');
      help.className = 'shortcuts';
      help.setAttribute('aria-labelledby', 'shortcuts-heading');
      const heading = document.createElement('h2');
      heading.id = 'shortcuts-heading';
      heading.textContent = 'Keyboard shortcuts';
      const table = document.createElement('dl');
      for (const [key, text] of SHORTCUTS) {
        const dt = document.createElement('dt');
        const kbd = document.createElement('kbd');
        kbd.textContent = key;
        dt.append(kbd);
        const dd = document.createElement('dd');
        dd.textContent = text;
        table.append(dt, dd);
      }
      const close = document.createElement('button');
      close.type = 'button';
      close.textContent = 'Close';
      close.addEventListener('click', () => help.close());
      help.append(heading, table, close);
      document.body.append(help);
    }
    if (!help.open) help.showModal();
  }

  const posts = () => [...document.querySelectorAll('main article.status')];
  const current = () => {
    const el = document.activeElement;
    return el && el.closest ? el.closest('main article.status') : null;
  };

  function move(step) {
    const all = posts();
    if (all.length === 0) return;
    const at = all.indexOf(current());
    const next = all[at === -1 ? (step > 0 ? 0 : all.length - 1) : Math.max(0, Math.min(all.length - 1, at + step))];
    next.tabIndex = -1;
    next.focus();
  }

  /** The button of the focused post (or of the only post of a thread page) whose action ends with one of `names`. */
  function press(names) {
    const post = current() || document.querySelector('main article.status-focus');
    if (!post) return;
    const button = [...post.querySelectorAll('form.status-actions button')].find((b) => names.some((n) => (b.getAttribute('formaction') || '').endsWith(`/${n}`)));
    if (button) button.click();
  }

  /** A text box named by the address (`#compose`, `#search-q`) gets the focus: the shortcuts lead there. */
  function focusFromHash() {
    const field = location.hash === '#compose' ? document.getElementById('status-text') : location.hash === '#search-q' ? document.getElementById('search-q') : null;
    if (field) field.focus();
  }
  focusFromHash();
  // The browser scrolls to the fragment once the page has loaded, and takes the focus off the box as it does.
  window.addEventListener('load', () => setTimeout(focusFromHash, 0));
  window.addEventListener('hashchange', focusFromHash);

  document.addEventListener('keydown', (event) => {
    const target = event.target;
    const typing = target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
    if (typing) {
      if (event.key === 'Escape' && !(help && help.open)) target.blur();
      else if (event.key === 'Enter' && (event.ctrlKey || event.metaKey) && target.tagName === 'TEXTAREA' && target.form) {
        event.preventDefault();
        target.form.requestSubmit();
      }
      return;
    }
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || (help && help.open)) return;
    switch (event.key) {
      case 'j': move(1); break;
      case 'k': move(-1); break;
      case 'n': {
        const compose = document.getElementById('status-text');
        if (compose && !compose.form.querySelector('input[name="in_reply_to_id"]')) compose.focus();
        else location.assign('/publish#compose');
        break;
      }
      case 'r': {
        const post = current() || document.querySelector('main article.status-focus');
        const link = post && post.querySelector('form.status-actions a[href$="#compose"]');
        if (!link) return;
        // This page's own reply form: no navigation, straight to it.
        if (new URL(link.href).pathname === location.pathname && document.getElementById('status-text')) document.getElementById('status-text').focus();
        else link.click();
        break;
      }
      case 'f': press(['favourite', 'unfavourite']); break;
      case 'b': press(['reblog', 'unreblog']); break;
      case '/': {
        const search = document.getElementById('search-q');
        if (search) search.focus();
        else location.assign('/search#search-q');
        break;
      }
      case '?': showHelp(); break;
      default: return;
    }
    event.preventDefault();
  });
})();
