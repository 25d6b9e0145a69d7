import { escapeHtml as e } from '../../text/render.ts';

const STYLE = `body{font-family:system-ui,sans-serif;background:#282c37;color:#d9e1e8;display:flex;justify-content:center;padding:2rem}
main{background:#313543;border-radius:8px;padding:2rem;max-width:26rem;width:100%}
h1{font-size:1.3rem;margin-top:0}label{display:block;margin:.8rem 0 .3rem}
input[type=email],input[type=password]{width:100%;padding:.5rem;border-radius:4px;border:1px solid #606984;background:#282c37;color:#fff;box-sizing:border-box}
.buttons{display:flex;gap:.5rem;margin-top:1.2rem}button{flex:1;padding:.6rem;border:0;border-radius:4px;font-weight:600;cursor:pointer}
button[value=approve]{background:#6364ff;color:#fff}button[value=deny]{background:#606984;color:#fff}
.error{background:#df405a;color:#fff;padding:.6rem;border-radius:4px}ul{padding-left:1.2rem}code{font-size:1.2rem;word-break:break-all;background:#282c37;padding:.6rem;display:block;border-radius:4px}`;

function layout(title: string, body: string): string {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${e(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`;
}

export interface AuthorizePageInput {
  appName: string;
  website: string | null;
  scopes: string[];
  /** The authorization request, carried through the form unchanged. */
  params: Record<string, string>;
  error?: string;
  email?: string;
}

/** The sign-in and approval page an app opens in the browser. */
export function authorizePage(input: AuthorizePageInput): string {
  const hidden = Object.entries(input.params)
    .map(([k, v]) => `<input type="hidden" name="${e(k)}" value="${e(v)}">`)
    .join('');
  const site = input.website ? ` (<a href="${e(input.website)}" rel="noopener noreferrer" style="color:#8c8dff">${e(input.website)}</a>)` : '';
  return layout(`Authorize ${input.appName}`, `
<h1>Authorize ${e(input.appName)}</h1>
<p>${e(input.appName)}${site} asks to use your account with these permissions:</p>
<ul>${input.scopes.map((s) => `<li>${e(s)}</li>`).join('')}</ul>
${input.error ? `<p class="error" role="alert">${e(input.error)}</p>` : ''}
<form method="post" action="/oauth/authorize">
${hidden}
<label for="email">E-mail address</label><input id="email" name="email" type="email" autocomplete="username" required value="${e(input.email ?? '')}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="buttons"><button type="submit" name="decision" value="approve">Authorize</button><button type="submit" name="decision" value="deny" formnovalidate>Deny</button></div>
</form>`);
}

export function authorizationCodePage(appName: string, code: string): string {
  return layout('Authorization code', `<h1>Authorization code</h1>
<p>Copy this code and paste it into ${e(appName)}.</p><code id="code">${e(code)}</code>`);
}

export function errorPage(title: string, message: string): string {
  return layout(title, `<h1>${e(title)}</h1><p class="error">${e(message)}</p>`);
}
