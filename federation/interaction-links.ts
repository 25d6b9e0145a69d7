/**
 * The links our WebFinger answers carry for remote interaction: OStatus's subscribe template, which Mastodon and most
 * others read, and FEP-3b86 intents. Each leads to /authorize_interaction (http/web/remote-interaction.ts), where a
 * person of this server sees the account or post and acts on it.
 */
export function interactionLinks(publicUrl: string): { rel: string; template: string }[] {
  const page = (variable: string) => `${new URL('/authorize_interaction', publicUrl).href}?uri={${variable}}`;
  return [
    { rel: 'http://ostatus.org/schema/1.0/subscribe', template: page('uri') },
    ...['Follow', 'Announce', 'Like', 'Object'].map((type) => ({ rel: `https://w3id.org/fep/3b86/${type}`, template: page('object') })),
  ];
}
