/**
 * Where a stranger goes who presses Follow, Reply, Boost or Favourite on a public page: to sign in here, then back to
 * the page (`returnTo`, a path of ours), where the signed-in page has the forms. People of another server are offered
 * remote interaction beside these (`/remote_interaction`, remote-interaction.ts); a choice between the two ways, if
 * one is ever wanted, belongs here.
 */
export function interactionPath(returnTo: string): string {
  return `/auth/sign_in?return_to=${encodeURIComponent(returnTo)}`;
}
