// Security keys and passkeys (WebAuthn): adding them in settings, using a key in the second step of signing in and a
// passkey instead of the password. The browser's own JSON helpers turn our options into what navigator.credentials
// wants, and its answer back into JSON.
(() => {
  async function post(url, form, body) {
    const res = await fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-csrf-token': form.querySelector('input[name="_csrf"]').value },
      body: JSON.stringify(body || {}),
    });
    const data = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(data.error || 'Something went wrong. Try again.');
    return data;
  }
  function showError(form, err) {
    const p = form.querySelector('.webauthn-error');
    p.textContent = err.name === 'NotAllowedError' ? 'The key was not used (cancelled, or timed out).' : err.message;
    p.hidden = false;
  }

  const register = document.getElementById('security-key-register');
  if (register) register.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const options = await post('/settings/security_keys/options', register);
      const credential = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options) });
      await post('/settings/security_keys', register, { nickname: register.elements.nickname.value, credential: credential.toJSON() });
      location.assign('/settings/security_keys?notice=key_added');
    } catch (err) {
      showError(register, err);
    }
  });

  const passkeyRegister = document.getElementById('passkey-register');
  if (passkeyRegister) passkeyRegister.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const options = await post('/settings/passkeys/options', passkeyRegister);
      const credential = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options) });
      await post('/settings/passkeys', passkeyRegister, { nickname: passkeyRegister.elements.nickname.value, credential: credential.toJSON() });
      location.assign('/settings/security_keys?notice=passkey_added');
    } catch (err) {
      showError(passkeyRegister, err);
    }
  });

  // Signing in with a passkey: shown only where the browser can use one.
  const passkeySignIn = document.getElementById('passkey-sign-in');
  if (passkeySignIn && window.PublicKeyCredential && PublicKeyCredential.parseRequestOptionsFromJSON) {
    passkeySignIn.hidden = false;
    passkeySignIn.addEventListener('submit', async (event) => {
      event.preventDefault();
      try {
        const options = await post('/auth/sign_in/passkey/options', passkeySignIn);
        const credential = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options) });
        const done = await post('/auth/sign_in/passkey', passkeySignIn, { credential: credential.toJSON(), return_to: passkeySignIn.elements.return_to.value });
        location.assign(done.redirect);
      } catch (err) {
        showError(passkeySignIn, err);
      }
    });
  }

  const signIn = document.getElementById('security-key-sign-in');
  if (signIn) signIn.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const options = await post('/auth/sign_in/webauthn/options', signIn);
      const credential = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options) });
      const done = await post('/auth/sign_in/webauthn', signIn, { credential: credential.toJSON() });
      location.assign(done.redirect);
    } catch (err) {
      showError(signIn, err);
    }
  });
})();
