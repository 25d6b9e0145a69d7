/**
 * Where a stranger goes who presses Follow, Reply, Boost or Favourite on a public page: to sign in here, then back to
 * the page (`returnTo`, a path of ours), where the signed-in page has the forms. This is the one hook for remote
 * interaction: once `/authorize_interaction` lets a person of another server act from their own, the choice between
 * signing in here and that is made here.
 */
export function interactionPath(returnTo: string): string {
  return `/auth/sign_in?return_to=${encodeURIComponent(returnTo)}`;
}
