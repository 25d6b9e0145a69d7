// The signed-in pages' one script, and only an enhancement: every action on them is a form that works without it.
// Where it runs, a post's buttons (boost, favourite, bookmark) and Follow send the same form with fetch, and the part
// of the page that changed (the post, the Follow form) is taken from the page the form leads back to, in place,
// with the focus kept on the button pressed. Anything unexpected falls back to sending the form as usual.
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
})();
